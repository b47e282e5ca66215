"""The host's server epoch, and the delivery cursors it issues and reads.

An ``Epoch`` is minted when a host (or an inline server) starts, one per ``App``: a cursor from before a restart is
refused as ``server_epoch_changed`` rather than followed (the drafts' rule: a cursor from another epoch must never
continue silently). A cursor is ``"<epoch>.<seq>.<tag>"``: the tag is a keyed hash (BLAKE2s, the epoch's key, which
never leaves the process) of the session id and the seq, so a cursor of another session, one this host did not
issue, or one edited by hand is a ``cursor_gap``; and since the host issues cursors only for events it stored, a
cursor that passes names an event of that session's log.

Standard library only (and ``meta`` for the errors): the handshake answers ``initialize`` with the epoch before the
rest of the server has loaded.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field

from .meta import condition_error

__all__ = ["Epoch"]

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
