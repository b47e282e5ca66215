"""Build an ``AssistantMessage`` from streamed fragments, and hand out the matching deltas.

Decoders call ``text``/``thinking`` for prose and reasoning fragments (a run of the same kind becomes one
part; ``end_run`` closes a run, e.g. at an Anthropic block boundary), ``sign_thinking``/``redacted_thinking``
for Anthropic's opaque reasoning data, and ``tool_call`` with a decoder-chosen key for tool-call fragments.
Parts keep the order in which they first appeared. Tool calls are numbered 0, 1, … in order of appearance;
that number is ``ToolCallDelta.index``. Ids are kept exactly as the provider sent them ("" when it sent none).
This module knows no wire format and no HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from hermes_acp.core import AssistantMessage, TextPart, ThinkingPart, ToolCallPart

from .base import TextDelta, ThinkingDelta, ToolCallDelta

__all__ = ["MessageAssembler"]


@dataclass
class _ProseSlot:
    kind: Literal["text", "thinking"]
    chunks: list[str] = field(default_factory=list)
    signature: str | None = None
    redacted: bool = False


@dataclass
class _ToolSlot:
    index: int
    id: str = ""
    name: str = ""
    chunks: list[str] = field(default_factory=list)
    fallback_arguments: str = ""


class MessageAssembler:
    """Collects one response's fragments; ``build`` returns the whole message."""

    def __init__(self) -> None:
        self._slots: list[_ProseSlot | _ToolSlot] = []
        self._tools: dict[object, _ToolSlot] = {}
        self._run_open = False

    @property
    def tool_call_count(self) -> int:
        return len(self._tools)

    def has_tool_call(self, key: object) -> bool:
        return key in self._tools

    def tool_call_id(self, key: object) -> str:
        return self._tools[key].id

    def text(self, fragment: str) -> TextDelta | None:
        if not fragment:
            return None
        self._prose("text").chunks.append(fragment)
        return TextDelta(text=fragment)

    def thinking(self, fragment: str) -> ThinkingDelta | None:
        if not fragment:
            return None
        self._prose("thinking").chunks.append(fragment)
        return ThinkingDelta(text=fragment)

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

    def tool_call(
        self,
        key: object,
        *,
        call_id: str | None = None,
        name: str | None = None,
        arguments: str = "",
        fallback_arguments: str | None = None,
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
            slot.id = call_id
        else:
            call_id = None
        if name and not slot.name:
            slot.name = name
        else:
            name = None
        if arguments:
            slot.chunks.append(arguments)
        if fallback_arguments is not None:
            slot.fallback_arguments = fallback_arguments
        if new:
            return ToolCallDelta(index=slot.index, id=slot.id or None, name=slot.name or None, arguments=arguments)
        return ToolCallDelta(index=slot.index, id=call_id, name=name, arguments=arguments)

    def build(self) -> AssistantMessage:
        parts: list[TextPart | ThinkingPart | ToolCallPart] = []
        for slot in self._slots:
            if isinstance(slot, _ToolSlot):
                arguments = "".join(slot.chunks) or slot.fallback_arguments
                parts.append(ToolCallPart(id=slot.id, name=slot.name, arguments=arguments))
            elif slot.kind == "text":
                text = "".join(slot.chunks)
                if text:
                    parts.append(TextPart(text=text))
            else:
                text = "".join(slot.chunks)
                if text or slot.signature:
                    parts.append(ThinkingPart(text=text, signature=slot.signature, redacted=slot.redacted))
        return AssistantMessage(parts=parts)

    def _prose(self, kind: Literal["text", "thinking"]) -> _ProseSlot:
        last = self._slots[-1] if self._slots else None
        if self._run_open and isinstance(last, _ProseSlot) and last.kind == kind and not last.redacted:
            return last
        slot = _ProseSlot(kind=kind)
        self._slots.append(slot)
        self._run_open = True
        return slot
