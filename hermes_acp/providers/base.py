"""The one streaming seam every model provider implements.

A provider turns a ``ProviderRequest`` (system prompt, neutral messages, tool specs, thinking effort) into a stream
of ``ProviderEvent``: text, reasoning and tool-call deltas while the model writes, then exactly one
``ResponseDone`` with the assembled message, the stop reason and the usage. Providers retry transient failures
only before the first event they yield, and raise ``hermes_acp.errors.ProviderError`` subclasses, never a foreign
exception. What a provider does on its own side stays there: a response it pauses is continued by the provider
(one ``ResponseDone`` for the whole), and tools it runs itself come as ``ServerToolCallPart`` /
``ServerToolResultPart`` in the message, never as ``ToolCallDelta``s.

This module knows no HTTP and no vendor format; ``openai.py`` and ``anthropic.py`` do, ``scripted.py`` is the
test double shipped beside the seam.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from hermes_acp.config import Effort, SendBackField
from hermes_acp.core import AssistantMessage, Message, Usage

__all__ = [
    "EchoRules",
    "ModelProvider",
    "ModelStopReason",
    "ProviderEvent",
    "ProviderRequest",
    "ResponseDone",
    "RetryWait",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallDelta",
    "ToolSpec",
]

ModelStopReason = Literal["end_turn", "tool_use", "max_tokens", "refusal"]


class ToolSpec(BaseModel):
    """A tool as offered to the model: name, description and JSON schema of its input."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    name: str
    description: str
    input_schema: dict[str, Any]


class EchoRules(BaseModel):
    """What a session learned about what a provider's server takes back with assistant messages (``echo.py``).

    ``omit``: fields the server refused (HTTP 400 naming them), never sent again; ``force``: fields it demanded,
    sent on every assistant message that calls tools, whatever ``send_back`` says."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    omit: frozenset[SendBackField] = frozenset()
    force: frozenset[SendBackField] = frozenset()


class ProviderRequest(BaseModel):
    """Everything one model call needs. ``model`` is the provider's own model id (without our prefix)."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    model: str
    system: str
    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    max_output_tokens: int | None = None
    effort: Effort | None = None
    """The thinking effort to ask for; None sends nothing. A provider sends it only for a model whose configured
    ``efforts`` include it, and it never changes the system prompt or the tool schemas."""
    echo_rules: EchoRules | None = None
    """What the session learned about the reasoning fields this provider's server takes back; None: nothing yet."""


class TextDelta(BaseModel):
    kind: Literal["text_delta"] = "text_delta"
    text: str


class ThinkingDelta(BaseModel):
    kind: Literal["thinking_delta"] = "thinking_delta"
    text: str


class ToolCallDelta(BaseModel):
    """A fragment of a tool call while it streams; ``index`` groups fragments of one call."""

    kind: Literal["tool_call_delta"] = "tool_call_delta"
    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class ResponseDone(BaseModel):
    """The end of a response: the whole message, why the model stopped, and the usage when reported."""

    kind: Literal["response_done"] = "response_done"
    message: AssistantMessage
    stop_reason: ModelStopReason
    usage: Usage | None = None
    cut: str | None = None
    """Why the agent stopped reading the response before its end (it passed a bound: ``core.bounds``); the stop
    reason is then ``max_tokens`` and the message holds what arrived."""
    echo_rules: EchoRules | None = None
    """Set when the provider had to change what it sends back to get this answer (a field the server refused or
    demanded): the rules to send every later request of the session with."""


class RetryWait(BaseModel):
    """The request failed before any output and will be retried after ``delay_s`` (a rate limit, an overloaded or
    unreachable service): the user is told, since the turn seems to stall meanwhile."""

    kind: Literal["retry_wait"] = "retry_wait"
    attempt: int
    """The retry about to be made (1 = the first retry)."""
    max_retries: int
    delay_s: float
    reason: str


ProviderEvent = TextDelta | ThinkingDelta | ToolCallDelta | RetryWait | ResponseDone


class ModelProvider(Protocol):
    """A source of model responses. Implementations own their HTTP client and close it in ``aclose``."""

    @property
    def provider_id(self) -> str: ...

    def stream(self, request: ProviderRequest) -> AsyncGenerator[ProviderEvent, None]:
        """Stream one response. Ends after ``ResponseDone``, or raises a ``ProviderError``."""
        ...

    async def aclose(self) -> None: ...
