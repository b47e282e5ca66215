"""What a stopped turn leaves open, settled: failed tool calls and interrupted responses.

A cancelled or broken turn, a store that refused a write and a killed server all leave announced calls without a
result. ``failed_settlements`` fails each one, from what the log knows: a call stored as running (or one from a log
that does not mark runs) gets the caller's ``ran`` failure; a call the log proves never started is "not run". The
turn loop, the repair before a session's next turn and crash recovery all settle through here, so a live card and
the reloaded one say the same. Only a call the model made gets a tool result for the history: a result whose call
the model never made would make every later request invalid. A call that announced an agent-owned terminal settles
with that terminal closed (``closed_terminals``, also what a tool's own outcome goes through), so no client is
left showing it running. ``interrupted_message`` stores the text a response had shown when its stream stopped.
``dropped_input`` says, in the transcript, that a queued prompt did not run or a steering message was not applied,
and why, quoting it. Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from hermes_acp.core import (
    AgentTerminalBlock,
    AssistantMessage,
    AssistantMessageStored,
    DisplayBlock,
    InputDropped,
    InputKind,
    TextBlock,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolCallSettled,
    ToolResultMessage,
)
from hermes_acp.core.ids import new_message_id
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
    "closed_terminals",
    "dropped_input",
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
                content=closed_terminals(call.terminals, [TextBlock(text=text)]),
                result=result,
                error_code=code,
            )
        )
    return events


def closed_terminals(started: Sequence[DisplayBlock], settled: list[DisplayBlock]) -> list[DisplayBlock]:
    """A settlement's content with the agent-owned terminals its call announced, and only those, ended: one the
    outcome does not end (the call failed before or around the tool, or was stopped) is closed without output; one
    the call never announced (it was to run in the editor's terminal, whose connection left meanwhile) is shown
    as its fallback, since no client knows its id."""
    announced = {b.terminal_id: b for b in started if isinstance(b, AgentTerminalBlock)}
    ended = {b.terminal_id for b in settled if isinstance(b, AgentTerminalBlock)}
    content: list[DisplayBlock] = [b.unfinished() for i, b in announced.items() if i not in ended]
    for block in settled:
        if isinstance(block, AgentTerminalBlock) and block.terminal_id not in announced:
            content.extend(block.fallback)
        else:
            content.append(block)
    return content


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


QUOTE_CHARS = 200
"""How much of a dropped input's text its notice quotes."""


def dropped_input(
    input_id: str, input_kind: InputKind, display: list[DisplayBlock], why: str, *, turn_id: str | None = None
) -> InputDropped:
    """``InputDropped`` for a queued prompt that did not run or a steering message that was not applied: ``why`` in
    the user's words ("the turn was cancelled"), with the start of what they sent, so they can send it again."""
    text = " ".join("".join(b.text for b in display if isinstance(b, TextBlock)).split())
    quoted = text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"
    what = "Queued prompt not run" if input_kind == "prompt" else "Steering message not applied"
    return InputDropped(
        input_id=input_id,
        input_kind=input_kind,
        message_id=new_message_id(),
        text=f"⚠ {what}: {why}." + (f" It said: «{quoted}»" if quoted else ""),
        turn_id=turn_id,
    )
