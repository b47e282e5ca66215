"""Crash recovery: settle what a killed server left open, so a loaded session is consistent (DESIGN §4.5).

A tool call that was announced or requested but has no result ran (or was about to run) when the server stopped;
its outcome is unknown and it is never re-executed. A turn without an end is closed. The events returned here are
stored like any other, so the repair is itself durable and replays identically. A live session whose store refused
a write mid-turn is left the same way; it gets the same repair, with ``STORE_FAILED_TEXT``, before its next turn.
"""

from __future__ import annotations

from hermes_acp.core import SessionEvent, TurnEnded
from hermes_acp.turns.projection import SessionProjection
from hermes_acp.turns.settlements import failed_settlements

__all__ = ["OUTCOME_UNKNOWN_TEXT", "STORE_FAILED_TEXT", "recovery_events"]

OUTCOME_UNKNOWN_TEXT = (
    "outcome unknown: the server stopped while this ran. It was not run again; check the current state"
    " before repeating it."
)
STORE_FAILED_TEXT = (
    "outcome unknown: the turn stopped because the session store failed while this ran. It was not run again;"
    " check the current state before repeating it."
)


def recovery_events(projection: SessionProjection, text: str = OUTCOME_UNKNOWN_TEXT) -> list[SessionEvent]:
    """Fail every open call with ``text`` (outcome unknown) and end every open turn as cancelled."""
    events: list[SessionEvent] = [*failed_settlements(projection, lambda _call_id: ("outcome_unknown", text))]
    events.extend(TurnEnded(turn_id=turn_id, stop_reason="cancelled") for turn_id in sorted(projection.open_turns))
    return events
