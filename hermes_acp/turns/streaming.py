"""One model response, streamed: deltas to the editor as they come, text checkpointed into the log as it grows.

``stream_response`` forwards text and reasoning deltas live (``LiveTextChunk`` / ``LiveThoughtChunk``) and keeps
them in a ``PartialResponse``, so a stop can store what was shown. Beside the stream, a checkpointer task stores
what arrived since its last write as ``AssistantTextCheckpointed`` once the oldest unsaved text is
``CheckpointPolicy.interval_s`` old or ``max_chars`` have piled up, whichever comes first, so a crash loses at
most that much of what the user saw. A checkpoint sends nothing live (the text was streamed already). The final
``ResponseDone`` comes back with tool-call ids made unique in the session; storing it is the
caller's job. Two bounds apply here (``core.bounds``): a response the provider stopped reading (``ResponseDone.cut``:
it never ended, or passed its output limit many times over) ends ``max_tokens`` with what was shown and the user is
told why; a response with more than ``MAX_TOOL_CALLS_PER_RESPONSE`` tool calls keeps the first ones, and a line of
text, streamed and stored like the rest, tells the model and the user how many were dropped. Talks to the provider
seam and the recorder only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import dataclass, field

import anyio
import anyio.from_thread
import anyio.to_thread

from hermes_acp.core import (
    AssistantMessage,
    AssistantTextCheckpointed,
    TextPart,
    ToolCallPart,
)
from hermes_acp.core.bounds import MAX_TOOL_CALLS_PER_RESPONSE
from hermes_acp.core.flags import Flag
from hermes_acp.core.ids import new_tool_call_id
from hermes_acp.core.messages import AssistantPart
from hermes_acp.core.notice import Notice
from hermes_acp.errors import ProviderStreamError, StorageError
from hermes_acp.providers.base import (
    ModelProvider,
    ProviderRequest,
    ResponseDone,
    RetryWait,
    TextDelta,
    ThinkingDelta,
)

from .ports import LiveTextChunk, LiveThoughtChunk
from .recorder import Recorder

__all__ = ["CHECKPOINTS", "CheckpointPolicy", "PartialResponse", "stream_response"]


@dataclass(frozen=True, slots=True)
class CheckpointPolicy:
    interval_s: float = 0.25
    """Longest time streamed text stays only in memory."""
    max_chars: int = 2048
    """Most streamed characters (text and reasoning) kept only in memory."""


CHECKPOINTS = CheckpointPolicy()


@dataclass(kw_only=True)
class PartialResponse:
    """The response being streamed: what was shown so far, and how much of it is already checkpointed."""

    message_id: str
    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    saved_text: int = 0
    """How many pieces of ``text`` are stored in checkpoints."""
    saved_thinking: int = 0

    @property
    def shown_text(self) -> str:
        return "".join(self.text)

    @property
    def shown_thinking(self) -> str:
        return "".join(self.thinking)

    def take_unsaved(self, *, turn_id: str, model_id: str) -> AssistantTextCheckpointed:
        """A checkpoint of what arrived since the previous one; from now on that counts as saved."""
        text, thinking = self.text[self.saved_text :], self.thinking[self.saved_thinking :]
        self.saved_text, self.saved_thinking = len(self.text), len(self.thinking)
        return AssistantTextCheckpointed(
            turn_id=turn_id,
            message_id=self.message_id,
            model_id=model_id,
            text="".join(text),
            thinking="".join(thinking),
        )


async def stream_response(
    provider: ModelProvider,
    request: ProviderRequest,
    partial: PartialResponse,
    *,
    recorder: Recorder,
    turn_id: str,
    model_id: str,
    checkpoints: CheckpointPolicy | None,
) -> ResponseDone:
    """Stream one response into ``partial`` and to the editor; checkpoint it by ``checkpoints`` (None: never).

    Raises the provider's error, ``ProviderStreamError`` for a stream without a final event, or ``StorageError``
    when a checkpoint cannot be stored (the stream is stopped then)."""
    if checkpoints is None:
        done = await _forward(provider, request, partial, recorder, turn_id=turn_id, grew=None)
    else:
        checkpointer = _Checkpointer(partial, recorder, turn_id=turn_id, model_id=model_id, policy=checkpoints)
        error: Exception | None = None
        async with anyio.create_task_group() as group:
            group.start_soon(checkpointer.write, group.cancel_scope)
            group.start_soon(checkpointer.watch)
            try:
                done = await _forward(provider, request, partial, recorder, turn_id=turn_id, grew=checkpointer.grew)
            except Exception as exc:  # raised below, not inside the group (which would wrap it in a group)
                error = exc
            finally:
                checkpointer.stop()
            group.cancel_scope.cancel()  # a checkpoint being written finishes first: its write is shielded
        if checkpointer.failure is not None:
            raise checkpointer.failure
        if error is not None:
            raise error
    if done.cut is not None:
        cut = Notice("warning", "The model's answer was cut", f"{done.cut}. What it wrote so far is kept.")
        await recorder.notice(cut, turn_id=turn_id)
    message = _with_unique_ids(done.message, recorder.projection.tool_call_ids)
    message, dropped = _capped_calls(message)
    if dropped:
        note = (
            f"\n\n[hermes-acp: this response asked for {dropped + MAX_TOOL_CALLS_PER_RESPONSE:,} tool calls; only the"
            f" first {MAX_TOOL_CALLS_PER_RESPONSE} run (at most {MAX_TOOL_CALLS_PER_RESPONSE} per response). Ask for"
            " the rest in later responses.]"
        )
        message = message.model_copy(update={"parts": [*message.parts, TextPart(text=note)]})
        partial.text.append(note)
        await recorder.live(LiveTextChunk(partial.message_id, note))
    return done if message is done.message else done.model_copy(update={"message": message})


def _capped_calls(message: AssistantMessage) -> tuple[AssistantMessage, int]:
    """``message`` with at most ``MAX_TOOL_CALLS_PER_RESPONSE`` tool calls (the first ones), and how many went."""
    calls = sum(isinstance(part, ToolCallPart) for part in message.parts)
    if calls <= MAX_TOOL_CALLS_PER_RESPONSE:
        return message, 0
    kept: list[AssistantPart] = []
    seen = 0
    for part in message.parts:
        if isinstance(part, ToolCallPart):
            seen += 1
            if seen > MAX_TOOL_CALLS_PER_RESPONSE:
                continue
        kept.append(part)
    return message.model_copy(update={"parts": kept}), calls - MAX_TOOL_CALLS_PER_RESPONSE


async def _forward(
    provider: ModelProvider,
    request: ProviderRequest,
    partial: PartialResponse,
    recorder: Recorder,
    *,
    turn_id: str,
    grew: Callable[[int], None] | None,
) -> ResponseDone:
    done: ResponseDone | None = None
    async with aclosing(provider.stream(request)) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                if event.text:
                    partial.text.append(event.text)
                    if grew is not None:
                        grew(len(event.text))
                    await recorder.live(LiveTextChunk(partial.message_id, event.text))
            elif isinstance(event, ThinkingDelta):
                if event.text:
                    partial.thinking.append(event.text)
                    if grew is not None:
                        grew(len(event.text))
                    await recorder.live(LiveThoughtChunk(partial.message_id, event.text))
            elif isinstance(event, RetryWait):
                await recorder.notice(_retry_notice(event), turn_id=turn_id)
            elif isinstance(event, ResponseDone):
                done = event
    if done is None:
        raise ProviderStreamError("the model's stream ended without a final event", provider=provider.provider_id)
    return done


def _retry_notice(wait: RetryWait) -> Notice:
    return Notice(
        "warning",
        f"Retrying the model request in {wait.delay_s:.0f} s ({wait.attempt} of {wait.max_retries})",
        wait.reason,
    )


class _Checkpointer:
    """Stores the unsaved part of ``partial`` once ``max_chars`` piled up or its oldest piece is ``interval_s`` old.

    ``grew`` is the hot path (one call per delta): a counter, a clock read when unsaved text starts, and one event
    set per checkpoint. The age of unsaved text is watched from a worker thread (``watch``), which wakes the writer
    when text waited ``interval_s``, also while the stream stalls. It is not watched with an event-loop timer: a
    loop timer armed for as long as text streams sits at the head of the loop's heap, and every timer the loop
    cancels meanwhile (one per send, one per network read) piles up behind it instead of being dropped, which costs
    each chunk a few percent.
    """

    def __init__(
        self, partial: PartialResponse, recorder: Recorder, *, turn_id: str, model_id: str, policy: CheckpointPolicy
    ):
        self._partial = partial
        self._recorder = recorder
        self._turn_id = turn_id
        self._model_id = model_id
        self._policy = policy
        self._unsaved = 0
        self._since = 0.0
        """When the oldest unsaved piece arrived (``time.monotonic``)."""
        self._due = Flag()
        """Set when the unsaved text is to be stored."""
        self._stopped = threading.Event()
        self.failure: StorageError | None = None

    def grew(self, chars: int) -> None:
        if not self._unsaved:
            self._since = time.monotonic()
        self._unsaved += chars
        if self._unsaved >= self._policy.max_chars and not self._due.is_set():
            self._due.set()

    def stop(self) -> None:
        """The stream ended: the watching thread returns at once."""
        self._stopped.set()

    async def write(self, stream_scope: anyio.CancelScope) -> None:
        """Store what is unsaved each time it is due; on a store failure, stop the stream."""
        while True:
            await self._due.wait()
            self._unsaved = 0
            checkpoint = self._partial.take_unsaved(turn_id=self._turn_id, model_id=self._model_id)
            if not (checkpoint.text or checkpoint.thinking):
                continue
            try:
                await self._recorder.record(checkpoint)
            except StorageError as exc:
                self.failure = exc
                stream_scope.cancel()
                return

    async def watch(self) -> None:
        await anyio.to_thread.run_sync(self._watch, limiter=anyio.CapacityLimiter(1))

    def _watch(self) -> None:
        """In a worker thread until ``stop``: make a checkpoint due when unsaved text waited ``interval_s``."""
        interval = self._policy.interval_s
        while not self._stopped.is_set():
            wait = interval
            if self._unsaved:
                wait = self._since + interval - time.monotonic()
                if wait <= 0:
                    anyio.from_thread.run_sync(self._make_due)
                    wait = interval
            self._stopped.wait(wait)

    def _make_due(self) -> None:
        if self._unsaved and not self._due.is_set():
            self._due.set()


def _with_unique_ids(message: AssistantMessage, used: set[str]) -> AssistantMessage:
    """Keep the provider's ids; replace only a missing id or one already used in this session."""
    seen: set[str] = set()
    parts: list[AssistantPart] = []
    changed = False
    for original in message.parts:
        part = original
        if isinstance(part, ToolCallPart) and (not part.id or part.id in used or part.id in seen):
            part = part.model_copy(update={"id": new_tool_call_id()})
            changed = True
        if isinstance(part, ToolCallPart):
            seen.add(part.id)
        parts.append(part)
    return message.model_copy(update={"parts": parts}) if changed else message
