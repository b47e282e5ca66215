"""``AnthropicProvider``: the Anthropic Messages API, streamed over httpx.

``POST {base_url}/v1/messages`` (a ``base_url`` that already ends in ``/v1`` is not doubled) with
``stream: true``, ``anthropic-version: 2023-06-01`` and ``x-api-key`` sent only when a key is set and only to
``base_url``'s own origin; ``headers`` are added to every request (a client's routing headers from
``providers/set``, held in memory). The request dialect (prompt-cache breakpoints, merged tool results, reasoning
signatures, the required ``max_tokens``) is described in ``_anthropic_request.py``; the stream decoding in
``_anthropic_stream.py``; retries, timeouts, error mapping and cancellation in ``_http.py`` (the base class).

Consumers should close the stream they iterate (``contextlib.aclosing``) when they stop early, so the HTTP
response is closed at once rather than when the generator is collected.
This module knows the provider's endpoint, headers, body builder and decoder; it does not know sessions, tools
or ACP.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

from hermes_acp.config import ProviderSettings

from ._anthropic_request import build_messages_request
from ._anthropic_stream import MessagesStreamDecoder
from ._http import HttpProvider
from .base import ProviderRequest

__all__ = ["ANTHROPIC_VERSION", "AnthropicProvider"]

ANTHROPIC_VERSION = "2023-06-01"


class AnthropicProvider(HttpProvider):
    """A ``ModelProvider`` for the Anthropic Messages API (and services that speak it)."""

    def __init__(
        self,
        provider_id: str,
        settings: ProviderSettings,
        api_key: str | None,
        *,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ):
        super().__init__(
            provider_id,
            settings,
            api_key,
            url=f"{settings.base_url.removesuffix('/v1')}/v1/messages",
            key_header=("x-api-key", api_key) if api_key else None,
            headers={"anthropic-version": ANTHROPIC_VERSION, "Accept": "text/event-stream", **(headers or {})},
            transport=transport,
            sleep=sleep,
        )

    def _body(self, request: ProviderRequest) -> dict[str, Any]:
        return build_messages_request(request, default_max_tokens=self._settings.max_output_tokens(request.model))

    def _new_decoder(self, request: ProviderRequest) -> MessagesStreamDecoder:
        return MessagesStreamDecoder(self._identity)
