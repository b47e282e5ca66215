"""``Recorder``: persist an event, fold it into the projection, then emit it (DESIGN §4.3).

The write is shielded from cancellation so a cancelled turn never leaves the store and the in-memory projection
disagreeing; the emission is bounded so a client that stops reading cannot hang the turn. It knows the store and
sink seams, not their implementations.
"""

from __future__ import annotations

import anyio

from hermes_acp.core import SessionEvent
from hermes_acp.storage.base import SessionStore

from .ports import LiveUpdate, UpdateSink
from .projection import SessionProjection

__all__ = ["EMIT_TIMEOUT_S", "Recorder"]

EMIT_TIMEOUT_S = 10.0
"""Longest wait for the client to take one update off our stdout."""


class Recorder:
    def __init__(self, session_id: str, store: SessionStore, sink: UpdateSink, projection: SessionProjection):
        self._session_id = session_id
        self._store = store
        self.sink = sink
        self.projection = projection

    async def record(self, *events: SessionEvent) -> None:
        """Store ``events`` (one transaction), apply them, then emit them in order. Raises ``StorageError``."""
        with anyio.CancelScope(shield=True):
            await self._store.append_events(self._session_id, events)
            for event in events:
                self.projection.apply(event)
            with anyio.move_on_after(EMIT_TIMEOUT_S):
                for event in events:
                    await self.sink.emit_event(event, live=True)

    async def live(self, update: LiveUpdate) -> None:
        """Send a transient update (streamed text, progress); bounded like every other send."""
        with anyio.move_on_after(EMIT_TIMEOUT_S):
            await self.sink.emit_live(update)
