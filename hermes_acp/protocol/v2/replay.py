"""The replay rules of v2: what ``session/resume`` sends before it answers.

A resume with ``replayFrom: {"type": "start"}`` replays the session's history (the events a replay shows:
``turns.timeline`` and ``turns.projection.transcript_events``, as for v1's ``session/load``), each rendered as a
replay (``render.event_updates(live=False)``) and carrying its stored event's cursor; a rejoin by cursor replays only
the events after it (``reliable.cursors``). Then, with or without a replay, exactly one ``state_update``: the state
the session is in now (``resume_state``), and then the response. A replayed turn's end renders nothing: a client
counts each idle ``state_update`` as a turn that completed (the TS SDK's ``ActiveSession`` turns each into a stop),
so the one snapshot stands for every turn in the history.

Pure: the session layer says which events and which state; nothing here reads the store or knows a session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hermes_acp.core import TurnEnded
from hermes_acp.storage.base import StoredEvent

from .render import BASELINE, Features, TurnState, event_updates, state_update

__all__ = ["replay_updates", "resume_state"]


def replay_updates(history: Sequence[StoredEvent], features: Features = BASELINE) -> list[tuple[int, dict[str, Any]]]:
    """Each update of ``history`` in order, with the ``seq`` of the event it came from (its cursor's)."""
    return [
        (stored.seq, update)
        for stored in history
        for update in event_updates(stored.event, live=False, features=features)
    ]


def resume_state(history: Sequence[StoredEvent], state: TurnState = "idle") -> dict[str, Any]:
    """The one ``state_update`` after a resume's replay: ``state`` (the session's now: ``running`` or
    ``requires_action`` when a turn is under way), and when idle, how its last turn ended."""
    if state != "idle":
        return state_update(state)
    last = next((s.event for s in reversed(history) if isinstance(s.event, TurnEnded)), None)
    return state_update("idle", stop_reason=None if last is None else last.stop_reason)
