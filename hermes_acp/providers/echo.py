"""Reasoning sent back behind any host: what a server refused or demanded, learned from its HTTP 400, per session.

A reasoning model's answer carries fields that some servers need back with the next request (``reasoning_content``
for DeepSeek, Kimi and GLM; ``reasoning_details`` for OpenRouter and MiniMax; Gemini's ``extra_content``) and that
others reject. The host name cannot tell which: the same DeepSeek stream comes through a LiteLLM or one-api proxy
on any host. So the OpenAI-compatible provider sends back whatever the stream carried (``send_back`` decides
otherwise), and when a server answers HTTP 400 naming one of these fields:

* it *refused* a field the request carried ("Additional properties are not allowed ('reasoning_content' was
  unexpected)", "property 'reasoning_content' is unsupported"): the request is sent once more without it;
* it *demanded* one ("The reasoning_content in the thinking mode must be passed back to the API", "Missing
  `reasoning_content` field", Gemini's "missing a thought_signature"): the request is sent once more with it.

``adjusted`` makes that decision (pure); the provider retries. What it learned comes back with the answer
(``ResponseDone.echo_rules``) and ``EchoMemory``, one per session, keeps it per provider and puts it on every later
request of the session (``EchoMemory.provider`` wraps a provider for that). Nothing is stored: a new session, or
a new process, starts from the stream again. This module knows no HTTP and no wire format beyond the field names.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Final

from hermes_acp.config import SEND_BACK_FIELDS, SendBackField

from .base import EchoRules, ModelProvider, ProviderEvent, ProviderRequest, ResponseDone

__all__ = ["EchoMemory", "adjusted"]

_NAMES: Final[dict[SendBackField, tuple[str, ...]]] = {
    "reasoning_content": ("reasoning_content",),
    "reasoning_details": ("reasoning_details",),
    "extra_content": ("extra_content", "thought_signature"),
}
"""How a server's message names each field (Gemini speaks of the thought signature inside ``extra_content``)."""
_DEMANDED = re.compile(
    r"must be passed back|must be (?:provided|included|sent|passed)|\bmissing\b|\bis required\b|\brequires?\b",
    re.IGNORECASE,
)


def adjusted(rules: EchoRules, message: str, sent: frozenset[SendBackField]) -> EchoRules | None:
    """The rules to send the refused request again with, or None when ``message`` (the server's 400) is not about a
    field we can change: one it demanded (not forced yet), or one it refused that the request carried (not left out
    yet)."""
    text = message.lower()
    demanded = _DEMANDED.search(message) is not None
    for field in SEND_BACK_FIELDS:
        if not any(name in text for name in _NAMES[field]):
            continue
        if demanded and field not in rules.force:
            return EchoRules(omit=rules.omit - {field}, force=rules.force | {field})
        if not demanded and field in sent and field not in rules.omit:
            return EchoRules(omit=rules.omit | {field}, force=rules.force - {field})
    return None


class EchoMemory:
    """One session's rules for each of its providers (by provider id), learned from their answers."""

    def __init__(self) -> None:
        self._rules: dict[str, EchoRules] = {}

    def rules(self, provider_id: str) -> EchoRules | None:
        return self._rules.get(provider_id)

    def learn(self, provider_id: str, rules: EchoRules) -> None:
        self._rules[provider_id] = rules

    def provider(self, provider: ModelProvider) -> ModelProvider:
        """``provider`` for this session: every request goes with what the session learned about it."""
        return _Remembering(provider, self)


class _Remembering:
    """A provider whose requests carry the session's ``EchoRules`` and whose answers teach the session new ones."""

    def __init__(self, inner: ModelProvider, memory: EchoMemory):
        self._inner = inner
        self._memory = memory

    @property
    def provider_id(self) -> str:
        return self._inner.provider_id

    async def stream(self, request: ProviderRequest) -> AsyncGenerator[ProviderEvent, None]:
        rules = self._memory.rules(self.provider_id)
        if rules is not None and request.echo_rules is None:
            request = request.model_copy(update={"echo_rules": rules})
        async with aclosing(self._inner.stream(request)) as events:
            async for event in events:
                if isinstance(event, ResponseDone) and event.echo_rules is not None:
                    self._memory.learn(self.provider_id, event.echo_rules)
                yield event

    async def aclose(self) -> None:
        """The inner provider is shared by every session; the registry closes it."""
