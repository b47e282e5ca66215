"""``OpenAIProvider``: any OpenAI-compatible chat-completions API, streamed over httpx.

Works with OpenAI, OpenRouter, vLLM, Ollama and LM Studio: ``POST {base_url}/chat/completions`` with
``stream: true`` and ``stream_options.include_usage``; ``Authorization: Bearer <key>`` only when a key is set,
and only to ``base_url``'s own origin. The request dialect (including how images in tool results travel: in a
user message right after the tool messages, because chat completions cannot carry images in tool messages)
is described in ``_openai_request.py``; the stream decoding in ``_openai_stream.py``; retries, timeouts,
error mapping and cancellation in ``_http.py``.

Consumers should close the stream they iterate (``contextlib.aclosing``) when they stop early, so the HTTP
response is closed at once rather than when the generator is collected.
This module knows the provider's endpoint and headers; it does not know sessions, tools or ACP.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing

import httpx

from hermes_acp.config import ProviderSettings

from ._http import ProviderHttp
from ._http_errors import ProviderIdentity
from ._openai_request import MaxTokensField, build_chat_request
from ._openai_stream import ChatCompletionsDecoder
from .base import ProviderEvent, ProviderRequest

__all__ = ["OpenAIProvider"]

_OPENAI_HOST = "api.openai.com"


class OpenAIProvider:
    """A ``ModelProvider`` for OpenAI-compatible chat completions."""

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
        self._url = f"{settings.base_url}/chat/completions"
        self._max_tokens_field: MaxTokensField = (
            "max_completion_tokens" if httpx.URL(settings.base_url).host == _OPENAI_HOST else "max_tokens"
        )
        self._http = ProviderHttp(
            self._identity,
            settings,
            key_header=("Authorization", f"Bearer {api_key}") if api_key else None,
            headers={"Accept": "text/event-stream"},
            transport=transport,
            sleep=sleep,
        )

    def __repr__(self) -> str:
        return f"OpenAIProvider({self._provider_id!r}, base_url={self._settings.base_url!r})"

    @property
    def provider_id(self) -> str:
        return self._provider_id

    async def stream(self, request: ProviderRequest) -> AsyncGenerator[ProviderEvent, None]:
        """Stream one response (see ``ModelProvider.stream``)."""
        body = build_chat_request(
            request,
            max_tokens_field=self._max_tokens_field,
            default_max_tokens=self._settings.max_output_tokens(request.model),
        )
        events = self._http.stream_events(self._url, body, lambda: ChatCompletionsDecoder(self._identity))
        async with aclosing(events):
            async for event in events:
                yield event

    async def aclose(self) -> None:
        await self._http.aclose()
