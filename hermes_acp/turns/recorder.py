"""``Recorder``: persist an event, fold it into the projection, then emit it (docs/architecture.md §4.3).

What is folded and emitted is what the store returns as stored (the store may have had to make text encodable),
so a live turn shows exactly what a replay will. The write is shielded from cancellation so a cancelled turn never
leaves the store and the in-memory projection disagreeing. Writes from tasks that run together (tool calls that
only read) take turns: each is stored, folded in and emitted before the next, so the editor sees the events in the
order a replay will show them. Every emission is bounded, and a client that lets one
wait out ``EMIT_TIMEOUT_S`` counts as stalled until the turn ends: nothing more is sent to it live (logged once),
so a client that stopped reading costs a turn one timeout, not one per update. The log keeps everything and
``session/load`` replays it. ``notice`` shows a warning live where the client takes notices and stores it as agent
text where it does not. It knows the store and sink seams, not their implementations.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence

import anyio
import structlog

from hermes_acp.core import NoticeAdded, SessionEvent, TurnEnded, UserPrompted
from hermes_acp.core.ids import new_message_id
from hermes_acp.core.notice import Notice
from hermes_acp.storage.base import SessionStore

from .ports import LiveUpdate, UpdateSink
from .projection import SessionProjection

__all__ = ["EMIT_TIMEOUT_S", "Recorder"]

EMIT_TIMEOUT_S = 10.0
"""Longest wait for the client to take one update off our stdout."""
_log = structlog.get_logger("hermes_acp.turns")


class Recorder:
    def __init__(self, session_id: str, store: SessionStore, sink: UpdateSink, projection: SessionProjection):
        self._session_id = session_id
        self._store = store
        self.sink = sink
        self.projection = projection
        self._stalled = False
        self._writing = anyio.Lock()
        self.on_prompted: Callable[[UserPrompted], None] | None = None
        """Told of each user prompt once it is stored and emitted (the prompt queue: ACP v2 answers a prompt then)."""

    async def record(self, *events: SessionEvent) -> None:
        """Store ``events`` (one transaction), apply them, then emit them in order, each with its ``seq``. Raises
        ``StorageError``."""
        with anyio.CancelScope(shield=True):
            async with self._writing:
                stored = await self._store.append_events(self._session_id, events)
                for item in stored:
                    self.projection.apply(item.event)
                await self._emit([(item.event, item.seq) for item in stored])
        for event in events:
            if isinstance(event, UserPrompted) and self.on_prompted is not None:
                self.on_prompted(event)
        if any(isinstance(event, TurnEnded) for event in events):
            self._stalled = False  # the next turn tries the client again

    @contextlib.asynccontextmanager
    async def quiet(self) -> AsyncIterator[None]:
        """Hold the writes: while inside, nothing is stored or emitted, so the log read meanwhile is exactly what
        was emitted (the cursor a connection that catches up is attached at)."""
        async with self._writing:
            yield

    async def show_unstored(self, *events: SessionEvent) -> None:
        """Emit ``events`` without storing them: the settlements of a turn whose store refused a write. The
        projection does not change (the session's next turn, or a reload, stores the same settlements)."""
        with anyio.CancelScope(shield=True):
            await self._emit([(event, None) for event in events])

    async def _emit(self, events: Sequence[tuple[SessionEvent, int | None]]) -> None:
        if self._stalled:
            return
        with anyio.move_on_after(EMIT_TIMEOUT_S) as emitting:
            for event, seq in events:
                await self.sink.emit_event(event, live=True, seq=seq)
        if emitting.cancelled_caught:
            self._stall()

    async def show(self, notice: Notice) -> bool:
        """Show a warning live where the client takes notices (bounded; never to a stalled client): True when it
        was, and then it is never stored; False when the caller is to store its text. The one place that decides
        between the two."""
        if self._stalled:
            return False
        with anyio.move_on_after(EMIT_TIMEOUT_S):
            return await self.sink.notice(notice)
        return False

    async def notice(self, notice: Notice, *, turn_id: str) -> None:
        """A warning for the user: a live ``notice`` where the client takes them (``show``), else stored as a line
        of agent text in ``turn_id`` (raises ``StorageError`` like ``record``)."""
        if not await self.show(notice):
            await self.record(NoticeAdded(turn_id=turn_id, message_id=new_message_id(), text=notice.as_text()))

    async def live(self, update: LiveUpdate) -> None:
        """Send a transient update (streamed text, progress); bounded like every other send, dropped when stalled."""
        if self._stalled:
            return
        with anyio.move_on_after(EMIT_TIMEOUT_S) as emitting:
            await self.sink.emit_live(update)
        if emitting.cancelled_caught:
            self._stall()

    def _stall(self) -> None:
        self._stalled = True
        _log.warning(
            "the client stopped taking updates; the rest of this turn is not sent live (session/load replays it)",
            session_id=self._session_id,
        )
