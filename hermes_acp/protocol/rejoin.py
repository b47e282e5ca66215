"""Where a client that rejoins a session by cursor picks up: ``session/load`` (v1) and ``session/resume`` (v2) with
``_meta.hermes.afterCursor``.

``rejoin_point`` reads the cursor (``reliable.epoch.Epoch.read``: another epoch or a cursor this host did not issue
for the session is refused with the draft's condition, never followed), then the events after it
(``reliable.cursors.rejoin``): the seq to replay after, with ``recovery`` ``"replay"`` (only what was missed), or,
when a rewind after the cursor took back events the client shows, no seq and ``"full"`` (the whole history: the
client rebuilds its view). The session manager then attaches the connection with exactly that history, read again
while the session's writes are held, so nothing recorded meanwhile is lost or sent twice. A request without a
cursor gets ``(None, None)``.
"""

from __future__ import annotations

from typing import Any, Literal

from hermes_acp.sessions import SessionManager

from .reliable import meta
from .reliable.cursors import rejoin
from .reliable.epoch import Epoch

__all__ = ["Recovery", "rejoin_point"]

Recovery = Literal["replay", "full"]


async def rejoin_point(
    manager: SessionManager, epoch: Epoch, session_id: str, raw: Any
) -> tuple[int | None, Recovery | None]:
    """The seq to replay after and how (see the module docstring); an unknown session is not found."""
    cursor = meta.after_cursor(raw)
    if cursor is None:
        return None, None
    await manager.status(session_id)  # not found before any word about its cursor
    plan = await rejoin(manager.services.store, epoch, session_id, cursor)
    if plan.full is not None:
        return None, "full"
    return epoch.read(cursor, session_id), "replay"
