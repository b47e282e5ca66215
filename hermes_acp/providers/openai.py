"""``OpenAIProvider``: any OpenAI-compatible chat-completions API, streamed over httpx.

Works with OpenAI, OpenRouter, vLLM, Ollama, LM Studio, DeepSeek, Gemini's OpenAI endpoint and the like:
``POST {base_url}/chat/completions`` with ``stream: true`` and ``stream_options.include_usage``;
``Authorization: Bearer <key>`` only when a key is set, and only to ``base_url``'s own origin; ``headers`` are added
to every request (a client's routing headers from ``providers/set``, held in memory). What a service
needs back with each assistant message (``send_back``) and whether a model writes its reasoning between think
tags (``think_tags``) come from the provider's settings; a server that refuses a reasoning field sent back, or
demands one, gets the request once more without or with it (``echo.py``). The request dialect (including how
images in tool results travel: in a user message right after the tool messages, because chat completions cannot
carry images in tool messages) is described in ``_openai_request.py``; the stream decoding in
``_openai_stream.py``; retries, timeouts, error mapping, pause continuations and cancellation in ``_http.py``
(the base class).

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
from hermes_acp.errors import ProviderRequestError

from ._http import HttpProvider
from ._openai_request import MaxTokensField, build_chat_request, sent_back_fields
from ._openai_stream import ChatCompletionsDecoder
from .base import EchoRules, ProviderRequest
from .echo import adjusted

__all__ = ["OpenAIProvider"]

_OPENAI_HOST = "api.openai.com"


class OpenAIProvider(HttpProvider):
    """A ``ModelProvider`` for OpenAI-compatible chat completions."""

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
            url=f"{settings.base_url}/chat/completions",
            key_header=("Authorization", f"Bearer {api_key}") if api_key else None,
            headers={"Accept": "text/event-stream", **(headers or {})},
            transport=transport,
            sleep=sleep,
        )
        self._max_tokens_field: MaxTokensField = (
            "max_completion_tokens" if httpx.URL(settings.base_url).host == _OPENAI_HOST else "max_tokens"
        )
        self._send_back = settings.send_back_fields()

    def _body(self, request: ProviderRequest) -> dict[str, Any]:
        return build_chat_request(
            request,
            max_tokens_field=self._max_tokens_field,
            default_max_tokens=self._settings.max_output_tokens(request.model),
            send_back=self._send_back,
        )

    def _resend(self, request: ProviderRequest, error: ProviderRequestError) -> ProviderRequest | None:
        body = self._body(request)
        rules = adjusted(request.echo_rules or EchoRules(), str(error), sent_back_fields(body))
        if rules is None:
            return None
        again = request.model_copy(update={"echo_rules": rules})
        return again if self._body(again) != body else None  # the same body again would be refused again

    def _new_decoder(self, request: ProviderRequest) -> ChatCompletionsDecoder:
        entry = self._settings.model_entry(request.model)
        think_tags = entry is not None and entry.think_tags
        return ChatCompletionsDecoder(self._identity, think_tags=think_tags)
