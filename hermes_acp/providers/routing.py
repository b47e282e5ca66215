"""Where each provider's requests go while the process runs: config.toml's settings, changed by a client that
manages endpoints (ACP's unstable ``providers/set`` and ``providers/disable``).

A ``ProviderRoute`` replaces one provider's kind, base URL and headers; the headers may carry credentials, so
routes live in this process's memory only and are never written to config.toml (a restart forgets them). A routed
provider sends no key of its own: the client's headers are the whole of its authentication. A provider that is not
configured gets its models from the route (the endpoint's ``/models``, listed by whoever sets the route). A
disabled provider leaves the effective settings, and with it the catalog.

``routed_settings`` is the one function that folds routes into settings; this module knows config, not HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from typing import Literal

from hermes_acp.config import ModelEntry, ProviderSettings, Settings

__all__ = ["ProviderRoute", "routed_settings"]


@dataclass(frozen=True, slots=True)
class ProviderRoute:
    kind: Literal["openai", "anthropic"]
    base_url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    models: tuple[str, ...] = ()
    """The endpoint's models, for a provider the configuration does not have (a configured one keeps its own)."""


def routed_settings(settings: Settings, routes: Mapping[str, ProviderRoute], disabled: Set[str]) -> Settings:
    """``settings`` with each route applied and each disabled provider removed (and ``model.default`` dropped
    when it named one of those, so the catalog falls back to the first usable model)."""
    if not routes and not disabled:
        return settings
    providers: dict[str, ProviderSettings] = {}
    for provider_id, provider in settings.providers.items():
        if provider_id in disabled:
            continue
        route = routes.get(provider_id)
        if route is None:
            providers[provider_id] = provider
            continue
        update: dict[str, object] = {"kind": route.kind, "base_url": route.base_url.rstrip("/"), "api_key_env": None}
        if not provider.models and route.models:
            update["models"] = [ModelEntry(id=model) for model in route.models]
        if route.kind != "openai":
            update["send_back"] = None
        providers[provider_id] = provider.model_copy(update=update)
    for provider_id, route in routes.items():
        if provider_id not in providers and provider_id not in disabled:
            providers[provider_id] = ProviderSettings(
                kind=route.kind, base_url=route.base_url, models=[ModelEntry(id=model) for model in route.models]
            )
    model = settings.model
    default_provider = (model.default or "").partition(":")[0]
    if model.default is not None and (default_provider not in providers or default_provider in disabled):
        model = model.model_copy(update={"default": None})
    return settings.model_copy(update={"providers": providers, "model": model})
