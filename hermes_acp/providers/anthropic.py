"""``AnthropicProvider``: the Anthropic Messages API, streamed over httpx.

``POST {base_url}/v1/messages`` (a ``base_url`` that already ends in ``/v1`` is not doubled) with
``stream: true``, ``anthropic-version: 2023-06-01`` and ``x-api-key`` sent only when a key is set and only to
``base_url``'s own origin. The request dialect (prompt-cache breakpoints, merged tool results, reasoning
signatures, the required ``max_tokens``) is described in ``_anthropic_request.py``; the stream decoding in
``_anthropic_stream.py``; retries, timeouts, error mapping and cancellation in ``_http.py``.

Consumers should close the stream they iterate (``contextlib.aclosing``) when they stop early, so the HTTP
response is closed at once rather than when the generator is collected.
This module knows the provider's endpoint and headers; it does not know sessions, tools or ACP.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing

import httpx

from hermes_acp.config import ProviderSettings

from ._anthropic_request import build_messages_request
from ._anthropic_stream import MessagesStreamDecoder
from ._http import ProviderHttp
from ._http_errors import ProviderIdentity
from .base import ProviderEvent, ProviderRequest

__all__ = ["ANTHROPIC_VERSION", "AnthropicProvider"]

ANTHROPIC_VERSION = "2023-06-01"


class AnthropicProvider:
    """A ``ModelProvider`` for the Anthropic Messages API (and services that speak it)."""

    def __init__(
        self,
        provider_id: str,
        settings: ProviderSettings,
        api_key: str | None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ):
        self._provider_id = provider_id
        self._settings = settings
        self._identity = ProviderIdentity(provider_id, settings.api_key_env, api_key or None)
        root = settings.base_url.removesuffix("/v1")
        self._url = f"{root}/v1/messages"
        self._http = ProviderHttp(
            self._identity,
            settings,
            key_header=("x-api-key", api_key) if api_key else None,
            headers={"anthropic-version": ANTHROPIC_VERSION, "Accept": "text/event-stream"},
            transport=transport,
            sleep=sleep,
        )

    def __repr__(self) -> str:
        return f"AnthropicProvider({self._provider_id!r}, base_url={self._settings.base_url!r})"

    @property
    def provider_id(self) -> str:
        return self._provider_id

    async def stream(self, request: ProviderRequest) -> AsyncGenerator[ProviderEvent, None]:
        """Stream one response (see ``ModelProvider.stream``)."""
        body = build_messages_request(request, default_max_tokens=self._settings.max_output_tokens(request.model))
        events = self._http.stream_events(self._url, body, lambda: MessagesStreamDecoder(self._identity))
        async with aclosing(events):
            async for event in events:
                yield event

    async def aclose(self) -> None:
        await self._http.aclose()
