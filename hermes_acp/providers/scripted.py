"""``ScriptedProvider``: a model that answers from a script, shipped in the package for tests and demos.

Each step is a ``ScriptedReply`` or a function of the request returning one. The provider records every request,
streams replies as deltas in small chunks (so streaming paths are exercised), can break a stream after N chunks or
hold it open on an event (for cancel tests), and raises ``ScriptExhaustedError`` when asked for more than was
scripted. It knows nothing about HTTP; it is the ``httpx.MockTransport`` of our provider seam.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field

import anyio
import anyio.lowlevel

from hermes_acp.core import AssistantMessage, TextPart, ThinkingPart, ToolCallPart, Usage
from hermes_acp.errors import ProviderError, ProviderStreamError

from .base import (
    ModelStopReason,
    ProviderEvent,
    ProviderRequest,
    ResponseDone,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
)

__all__ = ["ScriptExhaustedError", "ScriptedProvider", "ScriptedReply", "text_reply", "tool_reply"]


class ScriptExhaustedError(ProviderError):
    """The loop asked for a model response beyond the end of the script."""


@dataclass
class ScriptedReply:
    """One scripted model response."""

    parts: Sequence[TextPart | ThinkingPart | ToolCallPart]
    stop_reason: ModelStopReason | None = None
    """Defaults to ``tool_use`` when the reply has tool calls, else ``end_turn``."""
    usage: Usage | None = field(default_factory=lambda: Usage(input_tokens=100, output_tokens=20))
    fail_after_chunks: int | None = None
    """Raise ``ProviderStreamError`` after this many delta events (a stream cut mid-way)."""
    error: ProviderError | None = None
    """Raise this before any output (an HTTP error from the provider)."""
    hold: anyio.Event | None = None
    """After the first delta, wait for this event before going on (lets a test cancel mid-stream)."""


Step = ScriptedReply | Callable[[ProviderRequest], ScriptedReply]


def text_reply(text: str, **kwargs: object) -> ScriptedReply:
    return ScriptedReply(parts=[TextPart(text=text)], **kwargs)  # type: ignore[arg-type]


def tool_reply(*calls: ToolCallPart, text: str = "", **kwargs: object) -> ScriptedReply:
    parts: list[TextPart | ThinkingPart | ToolCallPart] = [TextPart(text=text)] if text else []
    parts.extend(calls)
    return ScriptedReply(parts=parts, **kwargs)  # type: ignore[arg-type]


class ScriptedProvider:
    """A provider whose responses are written in advance. ``requests`` records what the loop sent."""

    def __init__(self, steps: Sequence[Step] = (), *, provider_id: str = "scripted", chunk_size: int = 8):
        self._steps: list[Step] = list(steps)
        self._provider_id = provider_id
        self._chunk_size = max(1, chunk_size)
        self.requests: list[ProviderRequest] = []

    @property
    def provider_id(self) -> str:
        return self._provider_id

    async def aclose(self) -> None:
        return None

    async def stream(self, request: ProviderRequest) -> AsyncGenerator[ProviderEvent, None]:
        self.requests.append(request)
        index = len(self.requests) - 1
        if index >= len(self._steps):
            raise ScriptExhaustedError(
                f"scripted provider: response #{index + 1} was requested but the script has {len(self._steps)}",
                provider=self._provider_id,
            )
        step = self._steps[index]
        reply = step(request) if callable(step) else step
        if reply.error is not None:
            raise reply.error
        for emitted, event in enumerate(self._deltas(reply)):
            if reply.fail_after_chunks is not None and emitted >= reply.fail_after_chunks:
                raise ProviderStreamError("scripted provider: stream cut mid-way", provider=self._provider_id)
            await anyio.lowlevel.checkpoint()
            yield event
            if emitted == 0 and reply.hold is not None:
                await reply.hold.wait()
        has_calls = any(isinstance(p, ToolCallPart) for p in reply.parts)
        yield ResponseDone(
            message=AssistantMessage(parts=list(reply.parts)),
            stop_reason=reply.stop_reason or ("tool_use" if has_calls else "end_turn"),
            usage=reply.usage,
        )

    def _deltas(self, reply: ScriptedReply) -> list[ProviderEvent]:
        size = self._chunk_size
        events: list[ProviderEvent] = []
        call_index = 0
        for part in reply.parts:
            if isinstance(part, TextPart):
                events.extend(TextDelta(text=part.text[i : i + size]) for i in range(0, len(part.text), size))
            elif isinstance(part, ThinkingPart):
                events.extend(ThinkingDelta(text=part.text[i : i + size]) for i in range(0, len(part.text), size))
            else:
                events.append(ToolCallDelta(index=call_index, id=part.id, name=part.name))
                args = part.arguments
                events.extend(
                    ToolCallDelta(index=call_index, arguments=args[i : i + size]) for i in range(0, len(args), size)
                )
                call_index += 1
        return events
