"""Delivery cursors over the event log: what a client that rejoins has seen, and what it missed.

Every stored event has a ``seq``, durable and increasing within its session (``storage``). A cursor names one:
``"<epoch>.<seq>.<tag>"``, opaque to clients, made and read by the host's ``Epoch`` (``epoch``, where the rules are).
Updates rendered from one stored event share its cursor.

A rejoin (``rejoin``) reads the events after the cursor (``SessionStore.load_events(after=...)``) and replays them as
a replay renders them (``live=False``): v2's upserts make that exact (a complete message, a terminal's kept output,
a whole plan replace what the client held), and v1's events after the cursor are the ones it never saw. Two cases
cannot be a tail: a rewind after the cursor took back events the client shows, so it gets the whole history
(``Rejoin.full``: the client rebuilds its view); and text checkpoints of a response that completed after the
cursor are left out for the complete message, as in any replay (``turns.projection.transcript_events``). Text
streamed live after the cursor and not yet checkpointed is the session's to send (the audience's streamed tail).

No I/O but the store read in ``rejoin``; nothing here knows sessions or connections.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hermes_acp.core import Rewound
from hermes_acp.storage.base import SessionStore, StoredEvent
from hermes_acp.turns.projection import transcript_events

from .epoch import Epoch

__all__ = ["Epoch", "Rejoin", "plan_rejoin", "rejoin"]


@dataclass(frozen=True, slots=True)
class Rejoin:
    """What a rejoining client is sent: ``events`` to replay in order, or (``full`` says why) the whole history."""

    events: list[StoredEvent]
    full: str | None = None


def plan_rejoin(tail: Sequence[StoredEvent]) -> Rejoin:
    """The replay of ``tail``, the stored events after a client's cursor (see the module docstring)."""
    if any(isinstance(stored.event, Rewound) for stored in tail):
        return Rejoin([], full="a rewind after the cursor took back events the client shows")
    kept = {id(event) for event in transcript_events([stored.event for stored in tail])}
    return Rejoin([stored for stored in tail if id(stored.event) in kept])


async def rejoin(store: SessionStore, epoch: Epoch, session_id: str, cursor: str) -> Rejoin:
    """What a client that saw ``session_id`` up to ``cursor`` missed, read from ``store``."""
    seq = epoch.read(cursor, session_id)
    return plan_rejoin(await store.load_events(session_id, after=seq))
