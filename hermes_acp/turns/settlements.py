"""What a stopped turn leaves open, settled: failed tool calls and interrupted responses.

A cancelled or broken turn, a store that refused a write and a killed server all leave announced calls without a
result. ``failed_settlements`` fails each one, from what the log knows: a call stored as running (or one from a log
that does not mark runs) gets the caller's ``ran`` failure; a call the log proves never started is "not run". The
turn loop, the repair before a session's next turn and crash recovery all settle through here, so a live card and
the reloaded one say the same. Only a call the model made gets a tool result for the history: a result whose call
the model never made would make every later request invalid. ``interrupted_message`` stores the text a response
had shown when its stream stopped. Pure; no I/O.
"""

from __future__ import annotations

from hermes_acp.core import (
    AssistantMessage,
    AssistantMessageStored,
    TextBlock,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolCallSettled,
    ToolResultMessage,
)
from hermes_acp.errors import ErrorCode

from .projection import SessionProjection

__all__ = [
    "CANCELLED",
    "INTERRUPTED",
    "NOT_RUN",
    "OUTCOME_UNKNOWN",
    "OUTCOME_UNKNOWN_TEXT",
    "STORE_FAILED",
    "STORE_FAILED_TEXT",
    "Failure",
    "failed_settlements",
    "interrupted_message",
]

Failure = tuple[ErrorCode, str]
"""``(error_code, text)``: why a call failed, for the editor and (for the model's own calls) the model."""

NOT_RUN: Failure = ("not_run", "Not run: the turn was stopped before this call started.")
CANCELLED: Failure = (
    "cancelled",
    "Cancelled: the turn was stopped before this call finished; its outcome may be partial.",
)
INTERRUPTED: Failure = (
    "interrupted",
    "Interrupted: the turn stopped on an internal error before this call finished; its outcome may be partial.",
)
OUTCOME_UNKNOWN_TEXT = (
    "outcome unknown: the server stopped while this ran. It was not run again; check the current state"
    " before repeating it."
)
OUTCOME_UNKNOWN: Failure = ("outcome_unknown", OUTCOME_UNKNOWN_TEXT)
STORE_FAILED_TEXT = (
    "outcome unknown: the turn stopped because the session store failed while this ran. It was not run again;"
    " check the current state before repeating it."
)
STORE_FAILED: Failure = ("outcome_unknown", STORE_FAILED_TEXT)


def failed_settlements(projection: SessionProjection, ran: Failure) -> list[ToolCallSettled]:
    """A failed ``ToolCallSettled`` for every open call, in the order they were opened: ``ran`` for a call that may
    have run, ``NOT_RUN`` for one the log proves never started."""
    events: list[ToolCallSettled] = []
    for call_id, call in projection.open_calls.items():
        code, text = ran if call.may_have_run else NOT_RUN
        result = (
            ToolResultMessage(tool_call_id=call_id, name=call.name, parts=[TextPart(text=text)], is_error=True)
            if call.from_model
            else None
        )
        events.append(
            ToolCallSettled(
                turn_id=call.turn_id,
                tool_call_id=call_id,
                status="failed",
                content=[TextBlock(text=text)],
                result=result,
                error_code=code,
            )
        )
    return events


def interrupted_message(
    *, turn_id: str, message_id: str, model_id: str, text: str, thinking: str
) -> AssistantMessageStored | None:
    """The response a stopped stream had shown, stored as interrupted (the model later reads its text, not its
    reasoning); None when nothing was shown."""
    parts: list[TextPart | ThinkingPart | ToolCallPart] = []
    if thinking:
        parts.append(ThinkingPart(text=thinking))
    if text:
        parts.append(TextPart(text=text))
    if not parts:
        return None
    return AssistantMessageStored(
        turn_id=turn_id,
        message_id=message_id,
        message=AssistantMessage(parts=parts),
        model_id=model_id,
        interrupted=True,
    )
