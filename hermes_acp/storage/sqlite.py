"""``SqliteSessionStore``: sessions and their event logs in one SQLite file (WAL mode).

One connection, under a lock. Reads, session changes and WAL checkpoints run in worker threads, so the event loop
never waits for the disk. An append of events runs on the event loop itself when the connection is free and no
other process holds the write lock (``_append_here``): in WAL mode with ``synchronous=NORMAL`` a commit only writes
to the page cache (the WAL is synced by the checkpoints, which this store runs in a worker thread every
``CHECKPOINT_EVERY`` appends instead of SQLite doing it inside a commit), and a worker thread is what a busy event
loop starves: a streamed response's checkpoint waited half a second for one. Otherwise the append goes to a worker
thread too. Each append is one transaction; a SIGKILL loses nothing that was committed, and a failed one is rolled
back whole, so the store keeps serving once the cause is gone. Schema changes go through ``migrations.py``. sqlite3
is imported here and nowhere else; its errors become ``StorageError`` at this boundary, with a cause (disk full,
read-only, corrupt, locked, I/O error) taken from SQLite's error code and, for a failed write, from a look at the
files and the file system (free space, writable files, a read-only mount, the file-size limit). Every text written
is encodable: event payloads through ``encode_event``, columns through the one sanitizer. ``health`` is what
``--check`` reports.

A store that cannot be opened for writing (a read-only ``$HERMES_ACP_HOME``, a mount, an immutable file) is opened
read-only when the database exists: sessions can then be listed and loaded, and every write raises a
``StorageError`` (cause ``read_only``) that names the folder and what to do (``read_only`` says why). A damaged
database is reported as ``corrupt`` with its path and the advice to run ``hermes-acp --check``, which offers the
repair (``storage/repair.py``); a session whose record is missing while its events are there is damage too, never
"not found".
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

import anyio.to_thread
from pydantic import ValidationError

from hermes_acp import anchored
from hermes_acp.core import SessionEvent, SessionEventAdapter
from hermes_acp.core.sanitize import clean_text
from hermes_acp.errors import StorageCause, StorageError
from hermes_acp.platform import disk

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
from .migrations import MIGRATIONS, migrate

__all__ = ["SqliteSessionStore", "StoreHealth"]

T = TypeVar("T")
_UPDATABLE = frozenset({"mode_id", "model_id", "title", "archived", "deleted", "cwd", "meta"})
_SESSION_COLUMNS = "id, cwd, title, created_at, updated_at, parent_id, mode_id, model_id, archived, meta, deleted"
_ARCHIVED: Final[dict[str, str]] = {"exclude": "archived = 0", "include": "1 = 1", "only": "archived = 1"}
_CAUSES: Final[dict[int, StorageCause]] = {
    5: "locked",  # SQLITE_BUSY
    6: "locked",  # SQLITE_LOCKED
    8: "read_only",  # SQLITE_READONLY
    10: "io_error",  # SQLITE_IOERR (and its extended codes, e.g. SQLITE_IOERR_WRITE)
    11: "corrupt",  # SQLITE_CORRUPT
    13: "disk_full",  # SQLITE_FULL
    14: "read_only",  # SQLITE_CANTOPEN: confirmed (or not) by a look at the folder
    26: "corrupt",  # SQLITE_NOTADB
}
"""Primary SQLite result codes (the low byte of an extended code) and what they mean for the user."""
_OS_CAUSES: Final[dict[int, StorageCause]] = {
    errno.ENOSPC: "disk_full",
    errno.EDQUOT: "disk_full",
    errno.EFBIG: "disk_full",
    errno.EROFS: "read_only",
    errno.EACCES: "read_only",
    errno.EPERM: "read_only",
}
_LABELS: Final[dict[StorageCause, str]] = {
    "disk_full": "disk full",
    "read_only": "read-only",
    "corrupt": "corrupt",
    "locked": "locked by another process",
    "io_error": "I/O error",
    "other": "error",
}
_LOW_SPACE = 1024 * 1024
"""Free space below which a failed write is put down to a full disk."""
BUSY_TIMEOUT_MS = 5000
"""How long a write in a worker thread waits for another process's write lock."""
CHECKPOINT_EVERY = 200
"""Appends between two WAL checkpoints (in a worker thread; automatic checkpoints are off)."""
_BUSY = 5  # SQLITE_BUSY
_CANTOPEN = 14


@dataclass(frozen=True, slots=True)
class StoreHealth:
    """What ``PRAGMA quick_check`` and the schema version say about an open store."""

    problems: list[str]
    """``quick_check``'s findings (at most five); empty when the database is sound."""
    schema_version: int
    latest_version: int
    size_bytes: int
    """The database file and its write-ahead log."""


class SqliteSessionStore:
    """The durable store. Open with ``SqliteSessionStore.open(path)``; close with ``aclose``."""

    def __init__(
        self,
        connection: sqlite3.Connection,
        path: Path,
        *,
        read_only: str | None = None,
        checkpoint_every: int = CHECKPOINT_EVERY,
    ):
        self._db = connection
        self._path = path
        self.read_only = read_only
        """Why the store only reads (None: it writes too)."""
        self._lock = threading.Lock()
        self._appends = 0
        """Appends since the last WAL checkpoint."""
        self._checkpoint_every = checkpoint_every

    @classmethod
    async def open(cls, path: Path, *, checkpoint_every: int = CHECKPOINT_EVERY) -> SqliteSessionStore:
        """Open (creating or migrating) the store at ``path``; read-only when it exists but cannot be written.
        ``checkpoint_every``: appends between two WAL checkpoints."""
        connection, read_only = await anyio.to_thread.run_sync(_connect, path)
        return cls(connection, path, read_only=read_only, checkpoint_every=checkpoint_every)

    async def health(self) -> StoreHealth:
        """Check the open database (``PRAGMA quick_check``) and its schema version; raises ``StorageError``."""

        def check(db: sqlite3.Connection) -> StoreHealth:
            findings = [str(row[0]) for row in db.execute("PRAGMA quick_check(5)").fetchall()]
            (version,) = db.execute("PRAGMA user_version").fetchone()
            size = sum(_size(f) for f in _files(self._path))
            return StoreHealth(
                problems=[] if findings == ["ok"] else findings,
                schema_version=int(version),
                latest_version=len(MIGRATIONS),
                size_bytes=size,
            )

        return await self._run(check)

    def _writable(self) -> None:
        """Raise the read-only store's error before any write."""
        if self.read_only is not None:
            raise StorageError(
                f"the session store {self._path} is read-only ({self.read_only}): sessions can be listed and loaded,"
                f" not changed. Make {self._path.parent} writable, or set HERMES_ACP_HOME to a writable folder",
                cause="read_only",
            )

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self._close)

    def _close(self) -> None:
        with self._lock:
            if self.read_only is None:
                with suppress(sqlite3.Error):  # closing the last connection checkpoints anyway; this one says so
                    self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            self._db.close()

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def call() -> T:
            with self._lock:
                return fn(self._db)

        try:
            return await anyio.to_thread.run_sync(call)
        except sqlite3.Error as exc:
            raise _storage_error(exc, self._path, f"session store {self._path}") from exc

    def _append_here(self, fn: Callable[[sqlite3.Connection], list[StoredEvent]]) -> list[StoredEvent] | None:
        """Run the append ``fn`` on the calling (event-loop) thread, or return None without having written anything:
        the connection is in use by a worker thread, or another process holds the write lock (which ``BEGIN
        IMMEDIATE`` reports at once here, as the busy timeout is off for this attempt)."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            self._db.execute("PRAGMA busy_timeout = 0")
            try:
                return fn(self._db)
            except sqlite3.OperationalError as exc:
                if (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF == _BUSY and not self._db.in_transaction:
                    return None
                raise
            finally:
                self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        except sqlite3.Error as exc:
            raise _storage_error(exc, self._path, f"session store {self._path}") from exc
        finally:
            self._lock.release()

    async def _checkpoint_now_and_then(self) -> None:
        """Every ``checkpoint_every`` appends, move the WAL into the database (PASSIVE: never waits for readers)."""
        if self.read_only is not None:
            return
        self._appends += 1
        if self._appends < self._checkpoint_every:
            return
        self._appends = 0
        await self._run(lambda db: db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())

    async def create_session(self, record: SessionRecord) -> None:
        self._writable()

        def insert(db: sqlite3.Connection) -> None:
            with _transaction(db):
                _insert_session(db, record)

        await self._run(insert)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        def select(db: sqlite3.Connection) -> SessionRecord | None:
            row = db.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row:
                return _record(row)
            if db.execute("SELECT 1 FROM events WHERE session_id = ? LIMIT 1", (session_id,)).fetchone():
                raise StorageError(
                    f"session store {self._path}: corrupt: it holds the history of session {session_id!r} but no"
                    f" record of it. {_REPAIR_HINT}",
                    cause="corrupt",
                )
            return None

        return await self._run(select)

    async def update_session(self, session_id: str, **changes: Any) -> SessionRecord:
        unknown = set(changes) - _UPDATABLE
        if unknown:
            raise ValueError(f"cannot update session fields {sorted(unknown)}")
        self._writable()

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
        self._writable()
        encoded = [encode_event(e) for e in events]
        stored_events = [event for event, _ in encoded]
        payloads = [(e.kind, getattr(e, "turn_id", None), payload) for e, payload in encoded]

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
            pairs = zip(rows, stored_events, strict=True)
            return [StoredEvent(seq=row[1], created_at=now, event=event) for row, event in pairs]

        stored = self._append_here(append)
        if stored is None:
            stored = await self._run(append)
        await self._checkpoint_now_and_then()
        return stored

    async def load_events(self, session_id: str, *, after: int = 0) -> list[StoredEvent]:
        def load(db: sqlite3.Connection) -> list[tuple[int, str, str]]:
            return db.execute(
                "SELECT seq, created_at, payload_json FROM events WHERE session_id = ? AND seq > ? ORDER BY seq",
                (session_id, after),
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

        def select(db: sqlite3.Connection) -> list[tuple[Any, ...]]:
            clauses = ["deleted = 0", _ARCHIVED[archived]]
            params: list[Any] = []
            if not subagents:
                clauses.append("json_extract(meta, '$.provenance.kind') IS NOT 'subagent'")
            if cwd is not None:
                clauses.append("cwd = ?")
                params.append(clean_text(cwd))
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

    async def fork_session(self, source_id: str, record: SessionRecord, *, until_seq: int | None = None) -> None:
        self._writable()

        def fork(db: sqlite3.Connection) -> None:
            with _transaction(db):
                _insert_session(db, record)
                db.execute(
                    "INSERT INTO events (session_id, seq, turn_id, kind, payload_json, created_at)"
                    " SELECT ?, seq, turn_id, kind, payload_json, created_at FROM events"
                    " WHERE session_id = ? AND seq <= ? ORDER BY seq",
                    (record.id, source_id, until_seq if until_seq is not None else 2**62),
                )

        await self._run(fork)


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction. A failure anywhere, the COMMIT included (a full disk fails there), rolls it back, so
    the connection is never left inside a transaction that would refuse every later write."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # SQLite rolls back by itself after some errors (SQLITE_FULL, SQLITE_IOERR)
            with suppress(sqlite3.Error):  # the original error says what went wrong
                db.execute("ROLLBACK")
        raise


def _storage_error(exc: sqlite3.Error | OSError, path: Path, what: str) -> StorageError:
    """``exc`` as a ``StorageError`` whose message starts with ``what`` and names the cause."""
    if isinstance(exc, OSError):
        cause = _OS_CAUSES.get(exc.errno or 0, "other")
        return StorageError(f"{what}: {_LABELS[cause]}: {exc}", cause=cause)
    code = getattr(exc, "sqlite_errorcode", None)
    name = getattr(exc, "sqlite_errorname", None)
    cause = _CAUSES.get(code & 0xFF, "other") if isinstance(code, int) else "other"
    detail = None
    if cause in ("disk_full", "read_only", "io_error"):
        found = _diagnose(path)
        if found is not None:
            cause, detail = found
        elif isinstance(code, int) and code & 0xFF == _CANTOPEN:
            cause = "other"  # not a folder that cannot be written: a path that is not there, a file that is not ours
    message = f"{what}: {_LABELS[cause]}: {exc}" + (f" ({name})" if name else "") + (f"; {detail}" if detail else "")
    if cause == "corrupt":
        message += f". {_REPAIR_HINT}"
    return StorageError(message, cause=cause)


_REPAIR_HINT = "`hermes-acp --check` looks at the database and offers its repair"


def _connect(path: Path) -> tuple[sqlite3.Connection, str | None]:
    """The store's connection, and why it is read-only when it is (blocking; raises ``StorageError``)."""
    what = f"cannot open the session store {path}"
    try:
        return _connect_writable(path), None
    except (sqlite3.Error, OSError) as exc:
        error = _storage_error(exc, path, what)
        if error.cause != "read_only":
            raise error from exc
        if not path.is_file():
            raise StorageError(
                f"{error}. There is no session store yet, and {path.parent} cannot be written: make it writable, or"
                " set HERMES_ACP_HOME to a writable folder",
                cause="read_only",
            ) from exc
        try:
            return _connect_read_only(path), str(error)[len(what) + 2 :]
        except sqlite3.Error:
            raise error from exc


def _connect_writable(path: Path) -> sqlite3.Connection:
    _create_private(path)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA wal_autocheckpoint=0")  # checkpoints sync the disk: a worker thread runs them
        db.execute("PRAGMA foreign_keys=ON")
        migrate(db)
    except BaseException:
        db.close()
        raise
    return db


def _create_private(path: Path) -> None:
    """The database file, created ``0600`` in a folder created ``0700`` when they are missing, whatever the umask
    (SQLite gives its -wal and -shm files the database's mode). One that exists is SQLite's to open."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL
    with suppress(FileExistsError):
        os.close(anchored.open_fd(path.parent, path, flags, folders=anchored.PRIVATE_FOLDER))


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """The database opened for reading only: through SQLite's shared memory where it can be had, else as an
    immutable file (a write-ahead log that was never checkpointed is not read then; a clean close leaves none)."""
    for mode in ("ro", "ro&immutable=1"):
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode={mode}", uri=True, check_same_thread=False)
        try:
            db.execute("SELECT count(*) FROM sessions").fetchone()
            (version,) = db.execute("PRAGMA user_version").fetchone()
            if version > len(MIGRATIONS):
                raise sqlite3.DatabaseError(
                    f"state.db has schema version {version}, newer than this hermes-acp understands ({len(MIGRATIONS)})"
                )
            return db
        except sqlite3.Error:
            db.close()
            if mode != "ro":
                raise
    raise AssertionError("unreachable")


def _diagnose(path: Path) -> tuple[StorageCause, str] | None:
    """Why a write to the store at ``path`` failed, from the files and their file system; None when nothing shows."""
    for file in _files(path):
        if file.exists() and not os.access(file, os.W_OK):
            return "read_only", f"{file.name} is not writable"
    folder_error = _folder_unwritable(path.parent)
    if folder_error is not None:
        return "read_only", folder_error
    try:
        read_only = disk.mounted_read_only(path.parent)
        free = disk.free_bytes(path.parent)
    except OSError:
        return None
    if read_only:
        return "read_only", f"the file system holding {path.parent} is mounted read-only"
    if free < _LOW_SPACE:
        return "disk_full", f"{free} bytes free on the file system holding {path.parent}"
    limit = disk.file_size_limit()
    if limit is not None and max(_size(f) for f in _files(path)) + 64 * 1024 >= limit:
        return "disk_full", f"the store cannot grow past this process's file-size limit of {limit} bytes (ulimit -f)"
    return None


def _folder_unwritable(folder: Path) -> str | None:
    """Why no file can be created in ``folder`` (SQLite needs its -wal and -shm beside the database), if so."""
    probe = folder / f".write-check-{os.getpid()}"
    try:
        anchored.write_file(folder, probe, b"", durable=False)
        anchored.remove_file(folder, probe)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"no file can be created in {folder} ({exc.strerror or exc})"
    return None


def _files(path: Path) -> tuple[Path, Path, Path]:
    """The database and the write-ahead log and shared-memory files beside it."""
    return path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _insert_session(db: sqlite3.Connection, record: SessionRecord) -> None:
    db.execute(
        f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            _text(record.id),
            _text(record.cwd),
            _text(record.title),
            record.created_at,
            record.updated_at,
            _text(record.parent_id),
            _text(record.mode_id),
            _text(record.model_id),
            int(record.archived),
            json.dumps(record.meta),
            int(record.deleted),
        ),
    )


def _column_value(name: str, value: Any) -> Any:
    if name == "meta":
        return json.dumps(value)  # ASCII: a lone surrogate becomes an escape, which json.loads reads back
    if name in ("archived", "deleted"):
        return int(bool(value))
    return _text(value)


def _text(value: Any) -> Any:
    """A column value SQLite can encode: text cleaned by the one sanitizer (a lone surrogate is not UTF-8)."""
    return clean_text(value) if isinstance(value, str) else value


def _record(row: tuple[Any, ...]) -> SessionRecord:
    session_id, cwd, title, created_at, updated_at, parent_id, mode_id, model_id, archived, meta, deleted = row
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
        deleted=bool(deleted),
    )
