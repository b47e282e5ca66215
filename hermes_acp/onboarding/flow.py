"""The in-editor setup: two forms, a test request, config.toml written, the new model usable at once.

``run_setup_form`` asks through the editor's ``Elicitor`` (a form tied to the ``authenticate`` request, or to the
session of ``/setup``); both forms start from the provider in use (``forms.Current``):

1. the service form (``forms.service_form``); a key variable it names must be set in the agent's environment,
   or the user is told where to set it (``key_help``) and nothing is written;
2. the server's live model list (``reach.reach``): when nothing answers at the address, or the server refuses the
   key, the setup stops here, with nothing written and the words "nothing answers at URL — is Ollama running?" or
   "the key in VAR was refused";
3. the model form: a choice among the listed ids, or a typed id when the server lists none;
4. a test request to that model through the real provider (``reach.try_request``): a refusal, a timeout or an
   unknown model ends the setup saying so, and nothing is written;
5. ``config_file.write_choice`` (tomlkit: comments and other keys stay, a backup of the old file), with every model
   the server listed, so the model picker can switch among them without another setup;
6. the registry takes the new file and the catalog is replaced in place (``ProviderRegistry.reload``,
   ``ModelCatalog.replace``), so every open session and the next ``session/new`` can use the model without a
   restart.

Cancelling or declining a form at any step stops the setup with nothing written ("Setup cancelled; nothing was
written."). The answers are never logged (a key typed by mistake must not reach a log), and the key's value, once
found in the environment, is registered for redaction. The result says in words what happened; the caller shows
it. This module knows no ACP.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import structlog

from hermes_acp.errors import ConfigError, ToolError
from hermes_acp.home import named_config
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.telemetry import register_secret
from hermes_acp.tools.context import Elicitor

from .config_file import ProviderChoice, write_choice
from .forms import Current, Invalid, model_form, read_model, read_service, service_form
from .key_help import key_missing
from .reach import sentence

__all__ = ["SetupDone", "SetupStopped", "run_setup_form"]

_log = structlog.get_logger("hermes_acp.onboarding")
NOTHING_WRITTEN = "nothing was written"


@dataclass(frozen=True, slots=True)
class SetupDone:
    model_id: str
    """``<provider id>:<model id>``: the new default model."""
    config_file: Path
    backup: Path | None
    listed: bool
    """Whether the model was chosen from the server's list (False: typed)."""

    def describe(self) -> str:
        kept = f" (the previous file is kept as {self.backup})" if self.backup else ""
        return (
            f"Set up {self.model_id}: a test request worked, {self.config_file} now has it as the default model"
            f"{kept}, and it answers from now on, in this session too."
        )


@dataclass(frozen=True, slots=True)
class SetupStopped:
    reason: str
    cancelled: bool = False

    def describe(self) -> str:
        return self.reason


async def run_setup_form(
    elicitor: Elicitor,
    registry: ProviderRegistry,
    catalog: ModelCatalog,
    *,
    tool_call_id: str | None = None,
) -> SetupDone | SetupStopped:
    """The whole setup (see the module docstring); the registry gives the settings, home and environment."""
    try:
        return await _run(elicitor, registry, catalog, tool_call_id)
    except ToolError as exc:  # the editor refused a form, timed out, or went away
        return SetupStopped(_stopped(str(exc)), cancelled=True)


async def _run(
    elicitor: Elicitor, registry: ProviderRegistry, catalog: ModelCatalog, tool_call_id: str | None
) -> SetupDone | SetupStopped:
    env = registry.env
    current = Current.of(registry.settings, catalog.default_id)
    message, schema = service_form(current)
    reply = await elicitor.ask(message, schema, tool_call_id=tool_call_id)
    if reply.action != "accept":
        return _cancelled()
    service = read_service(reply.content or {})
    if isinstance(service, Invalid):
        return SetupStopped(f"{_stopped(service.problem)} Run the setup again to retry.")
    label = service.preset.label if service.preset.base_url else service.base_url
    api_key = None
    if service.api_key_env is not None:
        api_key = env.get(service.api_key_env) or None
        if api_key is None:
            return SetupStopped(key_missing(service.api_key_env, label))
        register_secret(api_key)

    from .reach import reach, try_request  # httpx loads with the setup, not before

    reached = await reach(service.kind, service.base_url, service.api_key_env, api_key, provider_id=service.preset.id)
    if reached.failure is not None:
        return SetupStopped(_stopped(reached.failure))
    listing = reached.listing
    same = current is not None and (current.kind, current.base_url) == (service.kind, service.base_url)
    message, schema = model_form(label, listing.ids, listing.problem, current.model if current and same else None)
    reply = await elicitor.ask(message, schema, tool_call_id=tool_call_id)
    if reply.action != "accept":
        return _cancelled()
    chosen = read_model(reply.content or {})
    if isinstance(chosen, Invalid):
        return SetupStopped(f"{_stopped(chosen.problem)} Run the setup again to retry.")
    choice = ProviderChoice(
        provider_id=service.preset.id,
        kind=service.kind,
        base_url=service.base_url,
        api_key_env=service.api_key_env,
        model=chosen.model,
        vision=chosen.vision,
        listed=listing.ids,
    )
    failure = await try_request(choice, api_key)
    if failure is not None:
        return SetupStopped(_stopped(f"the test request to {choice.model_ref} failed: {failure}"))
    settings = registry.settings
    path = settings.config_file or Path(named_config(env) or settings.home / "config.toml")
    try:
        written = write_choice(path, choice, env, home=settings.home)
    except ConfigError as exc:
        return SetupStopped(f"Setup stopped: {exc}")
    registry.reload(written.settings)
    catalog.replace(registry.catalog_for())
    _log.info("setup wrote a provider", provider=choice.provider_id, model=choice.model_ref, file=str(written.path))
    return SetupDone(choice.model_ref, written.path, written.backup, listed=chosen.model in listing.ids)


def _cancelled() -> SetupStopped:
    return SetupStopped(f"Setup cancelled; {NOTHING_WRITTEN}.", cancelled=True)


def _stopped(reason: str) -> str:
    """ "Setup stopped: <reason>; nothing was written." with one stop at the end, whatever ``reason`` ends with."""
    return f"Setup stopped: {sentence(reason)}; {NOTHING_WRITTEN}."
