"""``ProviderRegistry``: one live provider object per configured provider, created on first use, and where each
provider's requests go while the process runs.

The HTTP providers (and httpx with them) are imported only when a session first talks to a model, so serving
``initialize`` and ``session/new`` does not pay for them. Tests inject providers (e.g. a ``ScriptedProvider``) by id.

The settings can change under a running server: ``reload`` takes config.toml as the in-editor setup wrote it,
``route`` and ``disable`` apply a client's ``providers/set`` / ``providers/disable`` (``routing``; in memory only).
A provider whose settings changed is built anew for the next request; the old object is not closed while a turn may
still be streaming from it, only when the registry closes. ``catalog_for`` gives the catalog of the settings as they
stand, which the caller puts in place of the old one (``ModelCatalog.replace``), so that every session sees it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

import anyio.to_thread

from hermes_acp.config import ProviderSettings, Settings
from hermes_acp.errors import NoProviderError, ProviderAuthError

from .catalog import CatalogModel, ModelCatalog
from .routing import ProviderRoute, routed_settings

if TYPE_CHECKING:
    from .base import ModelProvider

__all__ = ["ProviderRegistry", "build_provider"]


class ProviderFactory(Protocol):
    def __call__(
        self, provider_id: str, settings: ProviderSettings, api_key: str | None, *, headers: Mapping[str, str] | None
    ) -> ModelProvider: ...


def _anthropic() -> ProviderFactory:
    from .anthropic import AnthropicProvider

    return AnthropicProvider


def _openai() -> ProviderFactory:
    from .openai import OpenAIProvider

    return OpenAIProvider


_IMPLEMENTATIONS: dict[str, Callable[[], ProviderFactory]] = {"anthropic": _anthropic, "openai": _openai}
"""Each provider kind's class, imported (with httpx) only when it is first asked for."""


def build_provider(
    provider_id: str, settings: ProviderSettings, api_key: str | None, *, headers: Mapping[str, str] | None = None
) -> ModelProvider:
    """The HTTP provider of ``settings.kind`` (imported, with httpx, on first use)."""
    return _IMPLEMENTATIONS[settings.kind]()(provider_id, settings, api_key, headers=headers)


class ProviderRegistry:
    def __init__(
        self,
        settings: Settings,
        env: Mapping[str, str],
        *,
        overrides: Mapping[str, ModelProvider] | None = None,
    ):
        self._file_settings = settings
        self._settings = settings
        self._env = env
        self._providers: dict[str, ModelProvider] = dict(overrides or {})
        self._routes: dict[str, ProviderRoute] = {}
        self._routes_seen: dict[str, ProviderRoute] = {}
        """The routes the live providers were built with."""
        self._disabled: set[str] = set()
        self._retired: list[ModelProvider] = []

    @property
    def env(self) -> Mapping[str, str]:
        """The environment the providers read their keys from (the agent's)."""
        return self._env

    @property
    def settings(self) -> Settings:
        """The settings in effect: config.toml's (as last loaded), with the client's routes applied."""
        return self._settings

    @property
    def routes(self) -> Mapping[str, ProviderRoute]:
        return dict(self._routes)

    @property
    def disabled(self) -> frozenset[str]:
        """The providers a client disabled (``providers/disable``) and has not routed again."""
        return frozenset(self._disabled)

    def reload(self, settings: Settings) -> None:
        """Serve ``settings`` from now on (config.toml changed), keeping the client's routes."""
        self._file_settings = settings
        self._refresh()

    def route(self, provider_id: str, route: ProviderRoute) -> None:
        """Send ``provider_id``'s next requests to ``route`` (enabling it again if it was disabled)."""
        self._routes[provider_id] = route
        self._disabled.discard(provider_id)
        self._refresh()

    def disable(self, provider_id: str) -> None:
        """``provider_id`` serves no more requests (its models leave the catalog) until it is routed again."""
        self._routes.pop(provider_id, None)
        self._disabled.add(provider_id)
        self._refresh()

    def catalog_for(self) -> ModelCatalog:
        """The catalog of the settings in effect."""
        return ModelCatalog.from_settings(self._settings, self._env)

    def _refresh(self) -> None:
        before = {pid: (self._settings.providers.get(pid), self._routes_seen.get(pid)) for pid in self._providers}
        self._settings = routed_settings(self._file_settings, self._routes, self._disabled)
        self._routes_seen = dict(self._routes)
        for provider_id, was in before.items():
            if was != (self._settings.providers.get(provider_id), self._routes.get(provider_id)):
                self._retired.append(self._providers.pop(provider_id))

    def provider_for(self, model: CatalogModel) -> ModelProvider:
        """The provider serving ``model``; raises ``ProviderAuthError`` when its key is missing."""
        existing = self._providers.get(model.provider_id)
        if existing is not None:
            return existing
        if not model.usable:
            raise ProviderAuthError(
                f"provider {model.provider_id!r} needs an API key: set {model.api_key_env}"
                " in the agent's environment, or run `hermes-acp --setup`",
                provider=model.provider_id,
            )
        settings = self._settings.providers.get(model.provider_id)
        if settings is None:
            raise NoProviderError(f"no provider {model.provider_id!r} is configured", provider=model.provider_id)
        api_key = self._env.get(settings.api_key_env) if settings.api_key_env else None
        route = self._routes.get(model.provider_id)
        provider = build_provider(model.provider_id, settings, api_key, headers=route.headers if route else None)
        self._providers[model.provider_id] = provider
        return provider

    async def warm_up(self, model: CatalogModel) -> None:
        """Import the HTTP provider ``model`` needs, off the event loop, so the first prompt does not pay for it."""
        settings = self._settings.providers.get(model.provider_id)
        if model.provider_id in self._providers or settings is None:
            return
        await anyio.to_thread.run_sync(_IMPLEMENTATIONS[settings.kind], abandon_on_cancel=True)

    async def aclose(self) -> None:
        providers, self._providers = [*self._retired, *self._providers.values()], {}
        self._retired = []
        for provider in providers:
            await provider.aclose()
