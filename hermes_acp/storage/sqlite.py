"""``SqliteSessionStore``: sessions and their event logs in one SQLite file (WAL mode).

One connection, used from worker threads under a lock, so the event loop never blocks on the disk. Each append is
one transaction; a SIGKILL loses nothing that was committed. Schema changes go through ``migrations.py``.
sqlite3 is imported here and nowhere else; its errors become ``StorageError`` at this boundary.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
from pydantic import ValidationError

from hermes_acp.core import SessionEvent, SessionEventAdapter
from hermes_acp.errors import StorageError

from .base import PAGE_SIZE, SessionPage, SessionRecord, StoredEvent, decode_cursor, encode_cursor, utc_now
from .migrations import migrate

__all__ = ["SqliteSessionStore"]

T = TypeVar("T")
_UPDATABLE = frozenset({"mode_id", "model_id", "title", "archived", "cwd", "meta"})
_SESSION_COLUMNS = "id, cwd, title, created_at, updated_at, parent_id, mode_id, model_id, archived, meta"


class SqliteSessionStore:
    """The durable store. Open with ``SqliteSessionStore.open(path)``; close with ``aclose``."""

    def __init__(self, connection: sqlite3.Connection, path: Path):
        self._db = connection
        self._path = path
        self._lock = threading.Lock()

    @classmethod
    async def open(cls, path: Path) -> SqliteSessionStore:
        def connect() -> sqlite3.Connection:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=5.0)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute("PRAGMA foreign_keys=ON")
                migrate(db)
            except BaseException:
                db.close()
                raise
            return db

        try:
            connection = await anyio.to_thread.run_sync(connect)
        except (sqlite3.Error, OSError) as exc:
            raise StorageError(f"cannot open the session store {path}: {exc}") from exc
        return cls(connection, path)

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self._close)

    def _close(self) -> None:
        with self._lock:
            self._db.close()

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def call() -> T:
            with self._lock:
                return fn(self._db)

        try:
            return await anyio.to_thread.run_sync(call)
        except sqlite3.Error as exc:
            raise StorageError(f"session store {self._path.name}: {exc}") from exc

    async def create_session(self, record: SessionRecord) -> None:
        def insert(db: sqlite3.Connection) -> None:
            with _transaction(db):
                _insert_session(db, record)

        await self._run(insert)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        def select(db: sqlite3.Connection) -> SessionRecord | None:
            row = db.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
            return _record(row) if row else None

        return await self._run(select)

    async def update_session(self, session_id: str, **changes: Any) -> SessionRecord:
        unknown = set(changes) - _UPDATABLE
        if unknown:
            raise ValueError(f"cannot update session fields {sorted(unknown)}")

        def update(db: sqlite3.Connection) -> SessionRecord:
            values = {k: _column_value(k, v) for k, v in changes.items()}
            values["updated_at"] = utc_now()
            assignments = ", ".join(f"{k} = ?" for k in values)
            with _transaction(db):
                cursor = db.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", (*values.values(), session_id))
                if cursor.rowcount != 1:
                    raise StorageError(f"session {session_id!r} is not in the store")
                row = db.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
            return _record(row)

        return await self._run(update)

    async def append_events(self, session_id: str, events: Sequence[SessionEvent]) -> list[StoredEvent]:
        payloads = [(e.kind, getattr(e, "turn_id", None), e.model_dump_json()) for e in events]

        def append(db: sqlite3.Connection) -> list[StoredEvent]:
            now = utc_now()
            with _transaction(db):
                (last,) = db.execute(
                    "SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?", (session_id,)
                ).fetchone()
                rows = [
                    (session_id, last + i + 1, turn_id, kind, payload, now)
                    for i, (kind, turn_id, payload) in enumerate(payloads)
                ]
                db.executemany(
                    "INSERT INTO events (session_id, seq, turn_id, kind, payload_json, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    rows,
                )
                cursor = db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id))
                if cursor.rowcount != 1:
                    raise StorageError(f"session {session_id!r} is not in the store")
            pairs = zip(rows, events, strict=True)
            return [StoredEvent(seq=row[1], created_at=now, event=event) for row, event in pairs]

        return await self._run(append)

    async def load_events(self, session_id: str) -> list[StoredEvent]:
        def load(db: sqlite3.Connection) -> list[tuple[int, str, str]]:
            return db.execute(
                "SELECT seq, created_at, payload_json FROM events WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()

        rows = await self._run(load)
        events = []
        for seq, created_at, payload in rows:
            try:
                event = SessionEventAdapter.validate_json(payload)
            except ValidationError as exc:
                raise StorageError(
                    f"session {session_id!r}: stored event #{seq} cannot be read ({exc.error_count()} problems);"
                    " the stored history is left untouched"
                ) from exc
            events.append(StoredEvent(seq=seq, created_at=created_at, event=event))
        return events

    async def list_sessions(self, *, cwd: str | None, cursor: str | None, limit: int = PAGE_SIZE) -> SessionPage:
        after = decode_cursor(cursor) if cursor else None

        def select(db: sqlite3.Connection) -> list[tuple[Any, ...]]:
            clauses = ["archived = 0"]
            params: list[Any] = []
            if cwd is not None:
                clauses.append("cwd = ?")
                params.append(cwd)
            if after is not None:
                clauses.append("(updated_at < ? OR (updated_at = ? AND id < ?))")
                params.extend([after[0], after[0], after[1]])
            sql = (
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE {' AND '.join(clauses)}"
                " ORDER BY updated_at DESC, id DESC LIMIT ?"
            )
            return db.execute(sql, (*params, limit + 1)).fetchall()

        rows = await self._run(select)
        records = [_record(row) for row in rows[:limit]]
        more = len(rows) > limit
        next_cursor = encode_cursor(records[-1].updated_at, records[-1].id) if more and records else None
        return SessionPage(sessions=records, next_cursor=next_cursor)

    async def fork_session(self, source_id: str, record: SessionRecord) -> None:
        def fork(db: sqlite3.Connection) -> None:
            with _transaction(db):
                _insert_session(db, record)
                db.execute(
                    "INSERT INTO events (session_id, seq, turn_id, kind, payload_json, created_at)"
                    " SELECT ?, seq, turn_id, kind, payload_json, created_at FROM events"
                    " WHERE session_id = ? ORDER BY seq",
                    (record.id, source_id),
                )

        await self._run(fork)


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _insert_session(db: sqlite3.Connection, record: SessionRecord) -> None:
    db.execute(
        f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            record.id,
            record.cwd,
            record.title,
            record.created_at,
            record.updated_at,
            record.parent_id,
            record.mode_id,
            record.model_id,
            int(record.archived),
            json.dumps(record.meta),
        ),
    )


def _column_value(name: str, value: Any) -> Any:
    if name == "meta":
        return json.dumps(value)
    if name == "archived":
        return int(bool(value))
    return value


def _record(row: tuple[Any, ...]) -> SessionRecord:
    session_id, cwd, title, created_at, updated_at, parent_id, mode_id, model_id, archived, meta = row
    try:
        parsed_meta = json.loads(meta) if meta else {}
    except ValueError:
        parsed_meta = {}
    return SessionRecord(
        id=session_id,
        cwd=cwd,
        title=title,
        created_at=created_at,
        updated_at=updated_at,
        parent_id=parent_id,
        mode_id=mode_id,
        model_id=model_id,
        archived=bool(archived),
        meta=parsed_meta if isinstance(parsed_meta, dict) else {},
    )
