"""Projections of the session log that the turn loop needs: the model history, what a stop leaves open, the rules.

``SessionProjection.apply`` folds one stored event in. It is used for live events (as they are stored) and to
rebuild a loaded session from its log, so both paths see the same history (tool results in the order the model
made the calls, whatever order they were stored in). ``transcript_events`` picks the events a
replay renders (a checkpoint of a message stored complete later is left out). Pure data; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from hermes_acp.core import (
    AssistantMessage,
    AssistantMessageStored,
    AssistantTextCheckpointed,
    Message,
    PermissionResolved,
    SessionEvent,
    TextPart,
    TitleSet,
    ToolCallRunning,
    ToolCallSettled,
    ToolCallStarted,
    ToolResultMessage,
    TurnEnded,
    UserMessage,
    UserPrompted,
)

__all__ = ["OpenCall", "OpenText", "SessionProjection", "transcript_events"]


@dataclass(frozen=True, slots=True)
class OpenCall:
    """An announced or requested tool call without a result yet."""

    name: str
    turn_id: str
    from_model: bool
    """True for a call the model made (its result belongs in the history); False for one the agent made on the
    user's behalf, such as reading a prompt attachment (the model never saw the call, so it gets no result)."""
    marks_run: bool = False
    """The log stores a ``ToolCallRunning`` before this call runs (see ``ToolCallStarted.marks_run``)."""
    running: bool = False
    """A ``ToolCallRunning`` was stored: the call ran, or was running, if it stops without a result."""

    @property
    def may_have_run(self) -> bool:
        """False only when the log proves the call never started."""
        return self.running or not self.marks_run


@dataclass(frozen=True, slots=True)
class OpenText:
    """The checkpointed text of a response that has no complete ``AssistantMessageStored`` yet."""

    turn_id: str
    model_id: str
    text: str = ""
    thinking: str = ""


@dataclass
class SessionProjection:
    history: list[Message] = field(default_factory=list)
    rules: dict[str, Literal["allow", "deny"]] = field(default_factory=dict)
    tool_call_ids: set[str] = field(default_factory=set)
    """Every tool-call id used in the session (ids must be unique across turns)."""
    open_calls: dict[str, OpenCall] = field(default_factory=dict)
    """Announced or requested tool calls without a result yet, by id."""
    open_texts: dict[str, OpenText] = field(default_factory=dict)
    """Checkpointed responses without their complete message yet, by message id."""
    open_turns: set[str] = field(default_factory=set)
    title: str | None = None
    first_prompt: str | None = None

    def apply(self, event: SessionEvent) -> None:
        match event:
            case UserPrompted():
                self.open_turns.add(event.turn_id)
                if not event.for_model:
                    return
                text = "".join(p.text for p in event.message.parts if isinstance(p, TextPart))
                if self.first_prompt is None and text.strip():  # an image-only prompt cannot name the session
                    self.first_prompt = text
                self._append_user(event.message)
            case AssistantMessageStored():
                self.open_texts.pop(event.message_id, None)
                message = event.message
                if event.interrupted:  # what had arrived: the text is kept for the model, the reasoning is not
                    message = AssistantMessage(parts=[p for p in message.parts if isinstance(p, TextPart)])
                if message.parts:
                    self.history.append(message)
                for call in message.tool_calls:
                    self.tool_call_ids.add(call.id)
                    self.open_calls[call.id] = OpenCall(call.name, event.turn_id, from_model=True)
            case AssistantTextCheckpointed():
                before = self.open_texts.get(event.message_id) or OpenText(event.turn_id, event.model_id)
                self.open_texts[event.message_id] = replace(
                    before, text=before.text + event.text, thinking=before.thinking + event.thinking
                )
            case ToolCallStarted():
                self.tool_call_ids.add(event.tool_call_id)
                known = self.open_calls.get(event.tool_call_id)
                if known is not None:
                    self.open_calls[event.tool_call_id] = replace(known, marks_run=event.marks_run)
                else:
                    self.open_calls[event.tool_call_id] = OpenCall(
                        event.name, event.turn_id, from_model=False, marks_run=event.marks_run
                    )
            case ToolCallRunning():
                running = self.open_calls.get(event.tool_call_id)
                if running is not None:
                    self.open_calls[event.tool_call_id] = replace(running, running=True)
            case ToolCallSettled():
                self.open_calls.pop(event.tool_call_id, None)
                if event.result is not None:
                    self._append_result(event.result)
            case PermissionResolved():
                if event.outcome == "allow_always":
                    self.rules[event.scope] = "allow"
                elif event.outcome == "reject_always":
                    self.rules[event.scope] = "deny"
            case TurnEnded():
                self.open_turns.discard(event.turn_id)
            case TitleSet():
                self.title = event.title
            case _:
                pass

    def _append_result(self, result: ToolResultMessage) -> None:
        """A tool result goes after its response's other results in the order the model made the calls, whatever
        order they settled in (calls that only read run together and finish in any order). The log keeps the order
        they settled in; this is where the model's order is restored, live and on a reload alike."""
        history = self.history
        first = len(history)
        while first > 0 and isinstance(history[first - 1], ToolResultMessage):
            first -= 1
        response = history[first - 1] if first > 0 else None
        calls = response.tool_calls if isinstance(response, AssistantMessage) else []
        order = {call.id: i for i, call in enumerate(calls)}
        rank = order.get(result.tool_call_id, len(order))
        at = len(history)
        while at > first:
            before = history[at - 1]
            if not isinstance(before, ToolResultMessage) or order.get(before.tool_call_id, -1) <= rank:
                break
            at -= 1
        history.insert(at, result)

    def _append_user(self, message: UserMessage) -> None:
        """Consecutive user messages (a turn that produced no answer) merge, so roles keep alternating."""
        last = self.history[-1] if self.history else None
        if isinstance(last, UserMessage):
            # Both sides were validated when they were built; do not re-validate the growing list.
            self.history[-1] = UserMessage.model_construct(parts=[*last.parts, TextPart(text="\n\n"), *message.parts])
        else:
            self.history.append(message)


def transcript_events(events: Sequence[SessionEvent]) -> list[SessionEvent]:
    """The events a replay renders, in order: a checkpoint is left out when its message is stored complete later
    (the complete message shows the whole text); the checkpoints of a message still streaming are kept."""
    complete = {e.message_id for e in events if isinstance(e, AssistantMessageStored)}
    return [e for e in events if not (isinstance(e, AssistantTextCheckpointed) and e.message_id in complete)]
