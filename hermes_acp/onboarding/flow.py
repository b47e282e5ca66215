"""The in-editor setup: two forms, a test request, config.toml written, the new model usable at once.

``run_setup_form`` asks through the editor's ``Elicitor`` (a form tied to the ``authenticate`` request, or to the
session of ``/setup``):

1. the service form (``forms.service_form``); a key variable it names must be set in the agent's environment,
   or the user is told where to set it (``key_help``) and nothing is written;
2. the server's live model list (``providers.probe.list_models``), then the model form: a choice among the listed
   ids, or a typed id when the server lists none;
3. a test request to that model through the real provider (``providers.probe.try_model``): a refusal, a timeout or
   an unreachable server ends the setup with the provider's own explanation, and nothing is written;
4. ``config_file.write_choice`` (tomlkit: comments and other keys stay, a backup of the old file);
5. the registry takes the new file and the catalog is replaced in place (``ProviderRegistry.reload``,
   ``ModelCatalog.replace``), so every open session and the next ``session/new`` can use the model without a
   restart.

Cancelling or declining a form at any step stops the setup with nothing written. The answers are never logged
(a key typed by mistake must not reach a log), and the key's value, once found in the environment, is registered
for redaction. The result says in words what happened; the caller shows it. This module knows no ACP.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import structlog

from hermes_acp.errors import ConfigError, ProviderError, ToolError
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.telemetry import register_secret
from hermes_acp.tools.context import Elicitor

from .config_file import ProviderChoice, write_choice
from .forms import Invalid, model_form, read_model, read_service, service_form
from .key_help import key_missing

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
        return SetupStopped(f"Setup stopped: {exc}; {NOTHING_WRITTEN}.", cancelled=True)


async def _run(
    elicitor: Elicitor, registry: ProviderRegistry, catalog: ModelCatalog, tool_call_id: str | None
) -> SetupDone | SetupStopped:
    env = registry.env
    message, schema = service_form()
    reply = await elicitor.ask(message, schema, tool_call_id=tool_call_id)
    if reply.action != "accept":
        return SetupStopped(f"Setup cancelled; {NOTHING_WRITTEN}.", cancelled=True)
    service = read_service(reply.content or {})
    if isinstance(service, Invalid):
        return SetupStopped(f"Setup stopped: {service.problem}; {NOTHING_WRITTEN}. Run the setup again to retry.")
    label = service.preset.label if service.preset.base_url else service.base_url
    api_key = None
    if service.api_key_env is not None:
        api_key = env.get(service.api_key_env) or None
        if api_key is None:
            return SetupStopped(key_missing(service.api_key_env, label))
        register_secret(api_key)

    from hermes_acp.providers.probe import list_models  # httpx loads with the setup, not before

    listing = await list_models(service.kind, service.base_url, api_key)
    message, schema = model_form(label, listing.ids, listing.problem)
    reply = await elicitor.ask(message, schema, tool_call_id=tool_call_id)
    if reply.action != "accept":
        return SetupStopped(f"Setup cancelled; {NOTHING_WRITTEN}.", cancelled=True)
    chosen = read_model(reply.content or {})
    if isinstance(chosen, Invalid):
        return SetupStopped(f"Setup stopped: {chosen.problem}; {NOTHING_WRITTEN}. Run the setup again to retry.")
    choice = ProviderChoice(
        provider_id=service.preset.id,
        kind=service.kind,
        base_url=service.base_url,
        api_key_env=service.api_key_env,
        model=chosen.model,
        vision=chosen.vision,
    )
    failure = await _test_request(choice, api_key)
    if failure is not None:
        return SetupStopped(failure)
    settings = registry.settings
    try:
        written = write_choice(settings.config_file or settings.home / "config.toml", choice, env, home=settings.home)
    except ConfigError as exc:
        return SetupStopped(f"Setup stopped: {exc}")
    registry.reload(written.settings)
    catalog.replace(registry.catalog_for())
    _log.info("setup wrote a provider", provider=choice.provider_id, model=choice.model_ref, file=str(written.path))
    return SetupDone(choice.model_ref, written.path, written.backup, listed=chosen.model in listing.ids)


async def _test_request(choice: ProviderChoice, api_key: str | None) -> str | None:
    """None when a request to the chosen model worked; else what went wrong, for the user."""
    from hermes_acp.providers.probe import candidate_settings, try_model
    from hermes_acp.providers.registry import build_provider

    settings = candidate_settings(choice.kind, choice.base_url, choice.api_key_env, choice.model)
    provider = build_provider(choice.provider_id, settings, api_key)
    try:
        await try_model(provider, choice.model)
    except ProviderError as exc:
        return f"The test request to {choice.model_ref} at {choice.base_url} failed: {exc}; {NOTHING_WRITTEN}."
    finally:
        await provider.aclose()
    return None
