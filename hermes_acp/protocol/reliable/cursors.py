"""Delivery cursors over the event log: what a client that rejoins has seen, and what it missed.

Every stored event has a ``seq``, durable and increasing within its session (``storage``). A cursor names one:
``"<epoch>.<seq>.<tag>"``, opaque to clients. The epoch is the host's (``Epoch``): minted when the host starts, so a
cursor from before a restart is refused as ``server_epoch_changed`` rather than followed (the drafts' rule: a
cursor from another epoch must never continue silently). The tag is a keyed hash (BLAKE2s, the epoch's key) of the
session id and the seq: a cursor of another session, a cursor this host did not issue, or one edited by hand is a
``cursor_gap``; and since the host issues cursors only for events it stored, a cursor that passes names an event
of that session's log. Updates rendered from one stored event share its cursor.

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

import base64
import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

from hermes_acp.core import Rewound
from hermes_acp.storage.base import SessionStore, StoredEvent
from hermes_acp.turns.projection import transcript_events

from .meta import condition_error

__all__ = ["Epoch", "Rejoin", "plan_rejoin", "rejoin"]

_TAG_BYTES = 6


@dataclass(frozen=True, slots=True)
class Epoch:
    """The host's server epoch: ``id`` goes to clients (``serverEpoch``), ``key`` never leaves the process."""

    id: str
    key: bytes = field(repr=False)

    @classmethod
    def mint(cls) -> Epoch:
        """A new epoch, for a host that starts."""
        return cls(id=secrets.token_urlsafe(6), key=secrets.token_bytes(16))

    def cursor(self, session_id: str, seq: int) -> str:
        """The cursor of the event ``seq`` of ``session_id``."""
        return f"{self.id}.{seq}.{self._tag(session_id, seq)}"

    def read(self, cursor: str, session_id: str) -> int:
        """The seq ``cursor`` names in ``session_id``; an error naming the draft's condition when it names none."""
        parts = cursor.split(".")
        if len(parts) == 3 and parts[0] != self.id:
            raise condition_error(
                "server_epoch_changed",
                f"cursor {cursor[:80]!r} is from server epoch {parts[0][:40]!r}, and this is {self.id!r}: the host"
                " restarted; resume with replayFrom start to get the whole history",
                serverEpoch=self.id,
            )
        seq = int(parts[1]) if len(parts) == 3 and parts[1].isdecimal() and len(parts[1]) <= 18 else None
        if seq is None or not secrets.compare_digest(parts[2], self._tag(session_id, seq)):
            raise condition_error(
                "cursor_gap",
                f"cursor {cursor[:80]!r} is not one this host issued for session {session_id!r}; resume with"
                " replayFrom start to get the whole history",
                serverEpoch=self.id,
            )
        return seq

    def _tag(self, session_id: str, seq: int) -> str:
        digest = hashlib.blake2s(f"{session_id}\x00{seq}".encode(), key=self.key, digest_size=_TAG_BYTES).digest()
        return base64.urlsafe_b64encode(digest).decode("ascii")


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
