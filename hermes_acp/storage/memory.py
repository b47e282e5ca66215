"""``InMemorySessionStore``: the test double of ``SessionStore``, with a switch that makes writes fail.

It keeps records and events in dictionaries and behaves like the SQLite store (same ordering, paging, errors and
encoding: an event is kept as ``encode_event`` would store it), so tests of the layers above can run without a file
and can simulate a disk that refuses writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hermes_acp.core import SessionEvent
from hermes_acp.core.sanitize import clean_text
from hermes_acp.errors import StorageError

from .base import (
    PAGE_SIZE,
    ArchiveFilter,
    SessionPage,
    SessionRecord,
    StoredEvent,
    decode_cursor,
    encode_cursor,
    encode_event,
    utc_now,
)

__all__ = ["InMemorySessionStore"]


class InMemorySessionStore:
    def __init__(self) -> None:
        self.records: dict[str, SessionRecord] = {}
        self.events: dict[str, list[StoredEvent]] = {}
        self.fail_writes = False
        """When True every write raises ``StorageError`` (a full disk, a locked file)."""
        self.read_only: str | None = None
        """Never read-only (the SQLite store can be, when its folder cannot be written)."""

    def _check_writable(self) -> None:
        if self.fail_writes:
            raise StorageError("session store: I/O error: disk I/O error (simulated)", cause="io_error")

    async def create_session(self, record: SessionRecord) -> None:
        self._check_writable()
        if record.id in self.records:
            raise StorageError(f"session {record.id!r} already exists")
        title = clean_text(record.title) if record.title is not None else None
        self.records[record.id] = replace(record, cwd=clean_text(record.cwd), title=title)
        self.events[record.id] = []

    async def get_session(self, session_id: str) -> SessionRecord | None:
        return self.records.get(session_id)

    async def update_session(self, session_id: str, **changes: Any) -> SessionRecord:
        self._check_writable()
        if session_id not in self.records:
            raise StorageError(f"session {session_id!r} is not in the store")
        cleaned: dict[str, Any] = {k: clean_text(v) if isinstance(v, str) else v for k, v in changes.items()}
        record = replace(self.records[session_id], **cleaned, updated_at=utc_now())
        self.records[session_id] = record
        return record

    async def append_events(self, session_id: str, events: Sequence[SessionEvent]) -> list[StoredEvent]:
        self._check_writable()
        if session_id not in self.records:
            raise StorageError(f"session {session_id!r} is not in the store")
        log = self.events[session_id]
        now = utc_now()
        stored = [
            StoredEvent(seq=len(log) + i + 1, created_at=now, event=encode_event(e)[0]) for i, e in enumerate(events)
        ]
        log.extend(stored)
        self.records[session_id] = replace(self.records[session_id], updated_at=now)
        return stored

    async def load_events(self, session_id: str, *, after: int = 0) -> list[StoredEvent]:
        return [stored for stored in self.events.get(session_id, []) if stored.seq > after]

    async def list_sessions(
        self,
        *,
        cwd: str | None,
        cursor: str | None,
        limit: int = PAGE_SIZE,
        archived: ArchiveFilter = "exclude",
        subagents: bool = False,
    ) -> SessionPage:
        after = decode_cursor(cursor) if cursor else None
        wanted = {"exclude": (False,), "include": (False, True), "only": (True,)}[archived]

        def listed(r: SessionRecord) -> bool:
            if r.deleted or r.archived not in wanted or (cwd is not None and r.cwd != clean_text(cwd)):
                return False
            return subagents or r.provenance is None or r.provenance.kind != "subagent"

        rows = sorted(
            (r for r in self.records.values() if listed(r)),
            key=lambda r: (r.updated_at, r.id),
            reverse=True,
        )
        if after is not None:
            rows = [r for r in rows if (r.updated_at, r.id) < after]
        page = rows[:limit]
        next_cursor = encode_cursor(page[-1].updated_at, page[-1].id) if len(rows) > limit else None
        return SessionPage(sessions=page, next_cursor=next_cursor)

    async def fork_session(self, source_id: str, record: SessionRecord, *, until_seq: int | None = None) -> None:
        await self.create_session(record)
        events = self.events.get(source_id, [])
        self.events[record.id] = [e for e in events if until_seq is None or e.seq <= until_seq]

    async def aclose(self) -> None:
        return None
