"""``ProviderRegistry``: one live provider object per configured provider, created on first use.

The HTTP providers (and httpx with them) are imported only when a session first talks to a model, so serving
``initialize`` and ``session/new`` does not pay for them. Tests inject providers (e.g. a ``ScriptedProvider``) by id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import anyio.to_thread

from hermes_acp.config import ProviderSettings, Settings
from hermes_acp.errors import NoProviderError, ProviderAuthError

from .catalog import CatalogModel

if TYPE_CHECKING:
    from .base import ModelProvider

__all__ = ["ProviderRegistry"]

ProviderFactory = Callable[[str, ProviderSettings, str | None], "ModelProvider"]


def _anthropic() -> ProviderFactory:
    from .anthropic import AnthropicProvider

    return AnthropicProvider


def _openai() -> ProviderFactory:
    from .openai import OpenAIProvider

    return OpenAIProvider


_IMPLEMENTATIONS: dict[str, Callable[[], ProviderFactory]] = {"anthropic": _anthropic, "openai": _openai}
"""Each provider kind's class, imported (with httpx) only when it is first asked for."""


class ProviderRegistry:
    def __init__(
        self,
        settings: Settings,
        env: Mapping[str, str],
        *,
        overrides: Mapping[str, ModelProvider] | None = None,
    ):
        self._settings = settings
        self._env = env
        self._providers: dict[str, ModelProvider] = dict(overrides or {})

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
        provider = _IMPLEMENTATIONS[settings.kind]()(model.provider_id, settings, api_key)
        self._providers[model.provider_id] = provider
        return provider

    async def warm_up(self, model: CatalogModel) -> None:
        """Import the HTTP provider ``model`` needs, off the event loop, so the first prompt does not pay for it."""
        settings = self._settings.providers.get(model.provider_id)
        if model.provider_id in self._providers or settings is None:
            return
        await anyio.to_thread.run_sync(_IMPLEMENTATIONS[settings.kind], abandon_on_cancel=True)

    async def aclose(self) -> None:
        providers, self._providers = list(self._providers.values()), {}
        for provider in providers:
            await provider.aclose()
