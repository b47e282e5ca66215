"""Crash recovery: settle what a killed server left open, so a loaded session is consistent (docs/architecture.md §4.5).

A response that was streaming is stored as interrupted with the text of its checkpoints (what the user saw, up to
the last one). A subagent that was running ends ``unknown`` (its own log is repaired when its parent's is loaded).
A tool call that was running has an unknown outcome and is never re-executed; one the log proves never started is
"not run". A turn without an end is closed. A queued prompt that never ran and a steering message never applied are
reported as such (``InputDropped``), never lost silently. The events returned here are stored like any other, so the
repair is itself durable and replays identically. A live session whose store refused a write mid-turn is
left the same way; it gets the same repair, with ``STORE_FAILED_TEXT``, before its next turn (the words its live
cards were settled with).
"""

from __future__ import annotations

from hermes_acp.core import SessionEvent, SubagentEnded, TurnEnded

from .projection import SessionProjection
from .settlements import (
    OUTCOME_UNKNOWN_TEXT,
    STORE_FAILED_TEXT,
    dropped_input,
    failed_settlements,
    interrupted_message,
)

__all__ = ["OUTCOME_UNKNOWN_TEXT", "STORE_FAILED_TEXT", "recovery_events"]

_STOPPED = {
    "prompt": "the server stopped before its turn came",
    "steering": "the server stopped before the turn reached a point where it could take it",
}


def recovery_events(
    projection: SessionProjection,
    text: str = OUTCOME_UNKNOWN_TEXT,
    *,
    inputs: bool = True,
) -> list[SessionEvent]:
    """Store every checkpointed response as interrupted, end every child that was running as ``unknown``, fail every
    open call (``text`` when it may have run), end every open turn as cancelled, and (``inputs``, after a crash)
    report the queued prompts and steering messages left behind. A live session's repair leaves its inputs alone:
    they are still waiting, or being applied."""
    events: list[SessionEvent] = []
    for input_id, pending in projection.pending_inputs.items() if inputs else ():
        why = _STOPPED[pending.input_kind]
        events.append(dropped_input(input_id, pending.input_kind, pending.display, why, turn_id=pending.turn_id))
    for message_id, open_text in projection.open_texts.items():
        message = interrupted_message(
            turn_id=open_text.turn_id,
            message_id=message_id,
            model_id=open_text.model_id,
            text=open_text.text,
            thinking=open_text.thinking,
        )
        if message is not None:
            events.append(message)
    events.extend(
        SubagentEnded(
            turn_id=child.turn_id,
            tool_call_id=child.tool_call_id,
            session_id=child.session_id,
            outcome="unknown",
            error=text,
        )
        for child in projection.open_children
    )
    events.extend(failed_settlements(projection, ("outcome_unknown", text)))
    events.extend(TurnEnded(turn_id=turn_id, stop_reason="cancelled") for turn_id in sorted(projection.open_turns))
    return events
