"""Projections of the session log that the turn loop needs: the model history and the remembered rules.

``SessionProjection.apply`` folds one stored event in. It is used for live events (as they are stored) and to
rebuild a loaded session from its log, so both paths see the same history. Pure data; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from hermes_acp.core import (
    AssistantMessage,
    AssistantMessageStored,
    Message,
    PermissionResolved,
    SessionEvent,
    TextPart,
    TitleSet,
    ToolCallSettled,
    ToolCallStarted,
    TurnEnded,
    UserMessage,
    UserPrompted,
)

__all__ = ["OpenCall", "SessionProjection"]


@dataclass(frozen=True, slots=True)
class OpenCall:
    """An announced or requested tool call without a result yet."""

    name: str
    turn_id: str
    from_model: bool
    """True for a call the model made (its result belongs in the history); False for one the agent made on the
    user's behalf, such as reading a prompt attachment (the model never saw the call, so it gets no result)."""


@dataclass
class SessionProjection:
    history: list[Message] = field(default_factory=list)
    rules: dict[str, Literal["allow", "deny"]] = field(default_factory=dict)
    tool_call_ids: set[str] = field(default_factory=set)
    """Every tool-call id used in the session (ids must be unique across turns)."""
    open_calls: dict[str, OpenCall] = field(default_factory=dict)
    """Announced or requested tool calls without a result yet, by id."""
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
                message = event.message
                if event.interrupted:  # what had arrived: the text is kept for the model, the reasoning is not
                    message = AssistantMessage(parts=[p for p in message.parts if isinstance(p, TextPart)])
                if message.parts:
                    self.history.append(message)
                for call in message.tool_calls:
                    self.tool_call_ids.add(call.id)
                    self.open_calls[call.id] = OpenCall(call.name, event.turn_id, from_model=True)
            case ToolCallStarted():
                self.tool_call_ids.add(event.tool_call_id)
                self.open_calls.setdefault(event.tool_call_id, OpenCall(event.name, event.turn_id, from_model=False))
            case ToolCallSettled():
                self.open_calls.pop(event.tool_call_id, None)
                if event.result is not None:
                    self.history.append(event.result)
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

    def _append_user(self, message: UserMessage) -> None:
        """Consecutive user messages (a turn that produced no answer) merge, so roles keep alternating."""
        last = self.history[-1] if self.history else None
        if isinstance(last, UserMessage):
            # Both sides were validated when they were built; do not re-validate the growing list.
            self.history[-1] = UserMessage.model_construct(parts=[*last.parts, TextPart(text="\n\n"), *message.parts])
        else:
            self.history.append(message)
