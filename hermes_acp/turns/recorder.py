"""``Recorder``: persist an event, fold it into the projection, then emit it (docs/architecture.md §4.3).

What is folded and emitted is what the store returns as stored (the store may have had to make text encodable),
so a live turn shows exactly what a replay will. The write is shielded from cancellation so a cancelled turn never
leaves the store and the in-memory projection disagreeing. Writes from tasks that run together (tool calls that
only read) take turns: each is stored, folded in and emitted before the next, so the editor sees the events in the
order a replay will show them. Emissions are bounded by the sink, not here (``UpdateSink``: the session's audience
bounds each send per connection and stops sending live to one that stalls, until the turn ends), so each update
pays for one stall check, not two. The log keeps everything and ``session/load`` replays it. ``notice`` shows a
warning live where the client takes notices and stores it as agent text where it does not. It knows the store and
sink seams, not their implementations.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence

import anyio

from hermes_acp.core import NoticeAdded, SessionEvent, UserPrompted
from hermes_acp.core.ids import new_message_id
from hermes_acp.core.notice import Notice
from hermes_acp.storage.base import SessionStore

from .ports import LiveUpdate, UpdateSink
from .projection import SessionProjection

__all__ = ["Recorder"]


class Recorder:
    def __init__(self, session_id: str, store: SessionStore, sink: UpdateSink, projection: SessionProjection):
        self._session_id = session_id
        self._store = store
        self.sink = sink
        self.projection = projection
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
        for event, seq in events:
            await self.sink.emit_event(event, live=True, seq=seq)

    async def show(self, notice: Notice) -> bool:
        """Show a warning live where the client takes notices (the sink bounds each connection and skips a stalled
        one): True when it was, and then it is never stored; False when the caller is to store its text. The one
        place that decides between the two."""
        return await self.sink.notice(notice)

    async def notice(self, notice: Notice, *, turn_id: str) -> None:
        """A warning for the user: a live ``notice`` where the client takes them (``show``), else stored as a line
        of agent text in ``turn_id`` (raises ``StorageError`` like ``record``)."""
        if not await self.show(notice):
            await self.record(NoticeAdded(turn_id=turn_id, message_id=new_message_id(), text=notice.as_text()))

    async def live(self, update: LiveUpdate) -> None:
        """Send a transient update (streamed text, progress), never stored."""
        await self.sink.emit_live(update)
