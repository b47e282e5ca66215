"""Build an ``AssistantMessage`` from streamed fragments, and hand out the matching deltas.

Decoders call ``text``/``thinking`` for prose and reasoning fragments (a run of the same kind becomes one
part; ``end_run`` closes a run, e.g. at an Anthropic block boundary), ``sign_thinking``/``redacted_thinking``
for Anthropic's opaque reasoning data, ``tool_call`` with a decoder-chosen key for tool-call fragments, and
``server_tool_call``/``server_tool_result`` for tools the provider ran itself. Parts keep the order in which they
first appeared. Tool calls are numbered 0, 1, … in order of appearance; that number is ``ToolCallDelta.index``.
Ids are kept exactly as the provider sent them ("" when it sent none).

Every fragment of prose, reasoning and arguments passes a ``TextStream`` (the one place where model-stream text
is made safe: split surrogate pairs joined, hidden characters removed), so the deltas handed out and the message
built hold the same text. ``finish`` releases what the streams held back; decoders call it before ``build``.
Signed reasoning also keeps what was sent, byte for byte (``ThinkingPart.verbatim``), when cleaning changed it.
What is kept only to be sent back (signatures, ``echo``, provider-side tool blocks) is kept as sent, except that
surrogates are made safe, so a hostile stream can never make the message unstorable.
This module knows no wire format and no HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from hermes_acp.core import (
    AssistantMessage,
    ServerToolCallPart,
    ServerToolResultPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from hermes_acp.core.messages import AssistantPart
from hermes_acp.core.sanitize import clean_text, join_surrogates

from ._text_stream import TextStream
from .base import ProviderEvent, TextDelta, ThinkingDelta, ToolCallDelta

__all__ = ["MessageAssembler"]


@dataclass
class _ProseSlot:
    kind: Literal["text", "thinking"]
    chunks: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    """Reasoning fragments as sent (for ``verbatim``)."""
    signature: str | None = None
    redacted: bool = False


@dataclass
class _ToolSlot:
    index: int
    stream: TextStream = field(default_factory=TextStream)
    id: str = ""
    name: str = ""
    chunks: list[str] = field(default_factory=list)
    fallback_arguments: str = ""
    echo: dict[str, Any] = field(default_factory=dict)


@dataclass
class _ServerCallSlot:
    id: str
    name: str
    chunks: list[str] = field(default_factory=list)
    fallback_arguments: str = ""
    block: dict[str, Any] | None = None


_Slot = _ProseSlot | _ToolSlot | _ServerCallSlot | ServerToolResultPart


class MessageAssembler:
    """Collects one response's fragments; ``build`` returns the whole message."""

    def __init__(self) -> None:
        self._slots: list[_Slot] = []
        self._tools: dict[object, _ToolSlot] = {}
        self._server_calls: dict[object, _ServerCallSlot] = {}
        self._streams: dict[Literal["text", "thinking"], TextStream] = {"text": TextStream(), "thinking": TextStream()}
        self._echo: dict[str, Any] = {}
        self._run_open = False

    @property
    def tool_call_count(self) -> int:
        return len(self._tools)

    def has_tool_call(self, key: object) -> bool:
        return key in self._tools

    def tool_call_id(self, key: object) -> str:
        return self._tools[key].id

    def has_server_tool_call(self, key: object) -> bool:
        return key in self._server_calls

    def text(self, fragment: str) -> TextDelta | None:
        cleaned = self._streams["text"].feed(fragment)
        if not cleaned:
            return None
        self._prose("text").chunks.append(cleaned)
        return TextDelta(text=cleaned)

    def thinking(self, fragment: str) -> ThinkingDelta | None:
        if not fragment:
            return None
        cleaned = self._streams["thinking"].feed(fragment)
        slot = self._prose("thinking")
        slot.raw.append(fragment)
        if not cleaned:
            return None
        slot.chunks.append(cleaned)
        return ThinkingDelta(text=cleaned)

    def sign_thinking(self, signature: str) -> None:
        """Append to the signature of the current reasoning run (opening an empty one if there is none)."""
        slot = self._prose("thinking")
        slot.signature = (slot.signature or "") + signature

    def redacted_thinking(self, data: str) -> None:
        """Anthropic's encrypted reasoning: kept as a redacted ``ThinkingPart`` with the data as signature."""
        self._slots.append(_ProseSlot(kind="thinking", signature=data, redacted=True))
        self._run_open = False

    def end_run(self) -> None:
        """The next prose fragment starts a new part even if it is of the same kind."""
        self._run_open = False

    def echo(self, key: str, value: Any) -> None:
        """A message-level field of the provider's format to send back verbatim (the last value given wins)."""
        self._echo[key] = _kept(value)

    def tool_call(
        self,
        key: object,
        *,
        call_id: str | None = None,
        name: str | None = None,
        arguments: str = "",
        fallback_arguments: str | None = None,
        echo: dict[str, Any] | None = None,
    ) -> ToolCallDelta:
        """Add a fragment of the call identified by ``key``; a new key opens a new call."""
        slot = self._tools.get(key)
        new = slot is None
        if slot is None:
            slot = _ToolSlot(index=len(self._tools))
            self._tools[key] = slot
            self._slots.append(slot)
        self._run_open = False
        if call_id and not slot.id:
            slot.id = clean_text(call_id)
            call_id = slot.id
        else:
            call_id = None
        if name and not slot.name:
            slot.name = clean_text(name)
            name = slot.name
        else:
            name = None
        arguments = slot.stream.feed(arguments) if arguments else ""
        if arguments:
            slot.chunks.append(arguments)
        if fallback_arguments is not None:
            slot.fallback_arguments = fallback_arguments
        if echo:
            slot.echo.update(_kept(echo))
        if new:
            return ToolCallDelta(index=slot.index, id=slot.id or None, name=slot.name or None, arguments=arguments)
        return ToolCallDelta(index=slot.index, id=call_id, name=name, arguments=arguments)

    def server_tool_call(
        self,
        key: object,
        *,
        call_id: str,
        name: str,
        fallback_arguments: str = "{}",
        block: dict[str, Any] | None = None,
    ) -> None:
        """A provider-side tool call opens; its input may follow as ``server_tool_arguments`` fragments, else it is
        ``fallback_arguments``."""
        slot = _ServerCallSlot(
            id=clean_text(call_id),
            name=clean_text(name),
            fallback_arguments=join_surrogates(fallback_arguments),
            block=_kept(block),
        )
        self._server_calls[key] = slot
        self._slots.append(slot)
        self._run_open = False

    def server_tool_arguments(self, key: object, fragment: str) -> None:
        self._server_calls[key].chunks.append(fragment)

    def server_tool_result(
        self, *, tool_call_id: str, name: str, text: str, is_error: bool = False, block: dict[str, Any] | None = None
    ) -> None:
        self._slots.append(
            ServerToolResultPart(
                tool_call_id=clean_text(tool_call_id),
                name=clean_text(name),
                text=clean_text(text),
                is_error=is_error,
                block=_kept(block),
            )
        )
        self._run_open = False

    def finish(self) -> list[ProviderEvent]:
        """Release what the text streams held back (the response is complete), and the arguments of calls that
        streamed none: the last deltas, if any."""
        events: list[ProviderEvent] = []
        text = self._streams["text"].flush()
        if text:
            self._prose("text").chunks.append(text)
            events.append(TextDelta(text=text))
        thought = self._streams["thinking"].flush()
        if thought:
            self._prose("thinking").chunks.append(thought)
            events.append(ThinkingDelta(text=thought))
        for slot in self._tools.values():
            rest = slot.stream.flush()
            if rest:
                slot.chunks.append(rest)
            elif not slot.chunks and slot.fallback_arguments:
                rest = slot.fallback_arguments  # no input streamed: the deltas add up to the message too
            if rest:
                events.append(ToolCallDelta(index=slot.index, arguments=rest))
        return events

    def build(self) -> AssistantMessage:
        parts: list[AssistantPart] = []
        for slot in self._slots:
            part = _part(slot)
            if part is not None:
                parts.append(part)
        return AssistantMessage(parts=parts, echo=dict(self._echo) or None)

    def _prose(self, kind: Literal["text", "thinking"]) -> _ProseSlot:
        last = self._slots[-1] if self._slots else None
        if self._run_open and isinstance(last, _ProseSlot) and last.kind == kind and not last.redacted:
            return last
        slot = _ProseSlot(kind=kind)
        self._slots.append(slot)
        self._run_open = True
        return slot


def _part(slot: _Slot) -> AssistantPart | None:
    if isinstance(slot, ServerToolResultPart):
        return slot
    if isinstance(slot, _ToolSlot):
        arguments = "".join(slot.chunks) or slot.fallback_arguments
        return ToolCallPart(id=slot.id, name=slot.name, arguments=arguments, echo=slot.echo or None)
    if isinstance(slot, _ServerCallSlot):
        arguments = join_surrogates("".join(slot.chunks)) or slot.fallback_arguments
        call = ServerToolCallPart(id=slot.id, name=slot.name, arguments=arguments)
        if slot.block is not None:
            block = {**slot.block, "input": call.parsed_arguments() or {}}
            call = call.model_copy(update={"block": block})
        return call
    text = "".join(slot.chunks)
    if slot.kind == "text":
        return TextPart(text=text) if text else None
    if not (text or slot.signature):
        return None
    verbatim = join_surrogates("".join(slot.raw)) if slot.signature and slot.raw else None
    return ThinkingPart(
        text=text,
        signature=join_surrogates(slot.signature) if slot.signature else slot.signature,
        redacted=slot.redacted,
        verbatim=verbatim if verbatim is not None and verbatim != text else None,
    )


def _kept(value: Any) -> Any:
    """Data kept only to be sent back: as it came, with surrogates made safe in every string."""
    if isinstance(value, str):
        return join_surrogates(value)
    if isinstance(value, dict):
        return {_kept(key): _kept(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_kept(item) for item in value]
    return value
