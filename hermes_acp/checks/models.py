"""Whether a configured model can work: the providers and models ``--check`` lists, and with ``--probe`` what each
provider answers.

Without ``--probe`` nothing is sent: a provider whose key variable is not set cannot work, and the check fails when
the default model (the one a prompt uses) cannot: no provider at all, or its key not set. With ``--probe`` each
provider whose key is set is asked as the setup asks (``onboarding.reach``, one way to do one thing): its models
(``/models``), then one tiny request to the model a prompt would use there (the default model, or the provider's
first). A provider where nothing answers, whose key is refused or whose test request fails is a problem, in the
setup's words ("nothing answers at URL — is Ollama running? `ollama serve`", "the key in VAR was refused"); a
configured model the server does not list is a warning. Keys are never shown, only their variables' names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from hermes_acp.config import ProviderSettings, Settings
from hermes_acp.errors import ConfigError
from hermes_acp.onboarding.config_file import ProviderChoice
from hermes_acp.onboarding.reach import reach, try_request
from hermes_acp.providers.catalog import ModelCatalog

__all__ = ["ModelsReport", "check_models"]

OK, BAD, WARN = "✓", "✗", "!"


@dataclass
class ModelsReport:
    problems: int = 0
    default_model: str | None = None
    providers: list[dict[str, Any]] = field(default_factory=list)
    """For ``--json``: each provider's id, kind, base URL, key variable and whether it is set, models, probe."""


def check_models(
    settings: Settings, env: Mapping[str, str], say: Callable[[str], None], *, probe: bool
) -> ModelsReport:
    """Report the providers and models through ``say`` (see the module docstring)."""
    report = ModelsReport()
    try:
        catalog = ModelCatalog.from_settings(settings, env)
    except ConfigError as exc:
        say(f"  {BAD} {exc}")
        report.problems += 1
        return report
    say("Providers and models:")
    for provider_id, provider in settings.providers.items():
        key = provider.api_key_env
        key_set = key is None or bool(env.get(key))
        key_state = "no key needed" if key is None else (f"{key} set" if key_set else f"{key} NOT set")
        say(f"  {OK if key_set else WARN} {provider_id} ({provider.kind}, {provider.base_url}, {key_state})")
        for model in catalog.models:
            if model.provider_id == provider_id:
                flags = ", vision" if model.vision else ""
                say(f"      - {model.id} (context {model.context_window}{flags})")
        report.providers.append(
            {
                "id": provider_id,
                "kind": provider.kind,
                "base_url": provider.base_url,
                "api_key_env": key,
                "key_set": key_set,
                "models": [m.id for m in provider.models],
            }
        )
    report.default_model = catalog.default_id
    say(f"  default model: {catalog.default_id or 'none'}")
    default = catalog.get(catalog.default_id) if catalog.default_id else None
    if default is None:
        say(
            f"  {BAD} no model can work: no provider is configured. Set HERMES_ACP_BASE_URL and HERMES_ACP_MODEL, or"
            " OPENAI_API_KEY / ANTHROPIC_API_KEY, or run `hermes-acp --setup`"
        )
        report.problems += 1
    elif not default.usable:
        say(
            f"  {BAD} the default model {default.id} cannot work: {default.api_key_env} is not set in this"
            " environment (set it where the agent starts, or run `hermes-acp --setup`)"
        )
        report.problems += 1
    if probe:
        default_id = catalog.default_id
        for entry in report.providers:
            provider = settings.providers[entry["id"]]
            found = anyio.run(_probe, entry["id"], provider, env, default_id, say)
            entry["probe"] = found
            report.problems += 0 if found["ok"] else 1
    return report


async def _probe(
    provider_id: str,
    provider: ProviderSettings,
    env: Mapping[str, str],
    default_id: str | None,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Ask one provider (see the module docstring); what it answered, for ``--json``."""
    key_env = provider.api_key_env
    api_key = env.get(key_env) if key_env else None
    found: dict[str, Any] = {"ok": False, "answered": None, "listed": None, "model": None, "failure": None}
    if key_env is not None and not api_key:
        found["failure"] = f"{key_env} is not set, so {provider_id} was not asked"
        say(f"  {BAD} {provider_id}: {found['failure']}")
        return found
    reached = await reach(provider.kind, provider.base_url, key_env, api_key, provider_id=provider_id)
    found["answered"] = reached.listing.answered
    if reached.failure is not None:
        found["failure"] = reached.failure
        say(f"  {BAD} {provider_id}: {reached.failure}")
        return found
    listed = reached.listing.ids
    found["listed"] = list(listed)
    if listed:
        say(f"  {OK} {provider_id} answers at {provider.base_url} and lists {len(listed)} model(s)")
        missing = [m.id for m in provider.models if m.id not in listed]
        if missing:
            say(f"  {WARN} {provider_id}: not among the models it lists: {', '.join(missing)}")
    else:
        say(f"  {WARN} {provider_id} answers but lists no models ({reached.listing.problem})")
    model = _model_to_try(provider_id, provider, default_id)
    if model is None:
        found["failure"] = f"{provider_id} has no model configured to try"
        say(f"  {BAD} {found['failure']}")
        return found
    found["model"] = f"{provider_id}:{model}"
    choice = ProviderChoice(provider_id, provider.kind, provider.base_url, key_env, model)
    failure = await try_request(choice, api_key)
    if failure is not None:
        found["failure"] = f"the test request to {choice.model_ref} failed: {failure}"
        say(f"  {BAD} {provider_id}: {found['failure']}")
        return found
    found["ok"] = True
    say(f"  {OK} a test request to {choice.model_ref} was answered")
    return found


def _model_to_try(provider_id: str, provider: ProviderSettings, default_id: str | None) -> str | None:
    """The model a prompt would use at this provider: the default model when it is this provider's, else its first."""
    owner, _, model = (default_id or "").partition(":")
    if owner == provider_id and model:
        return model
    return provider.models[0].id if provider.models else None
