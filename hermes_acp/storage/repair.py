"""``hermes-acp --repair``: a damaged session store copied, as far as it can be read, into a new one.

``repair_store(path)`` refuses while another process holds the database (an agent still running on it), then reads
the damaged file for reading only: every session record that can be read, and each session's events in order
until the first one that cannot be read (the events after a damaged page of a session are lost; its other sessions
keep theirs), into a fresh database made by the migrations. The damaged file (with its write-ahead log) is kept
beside it as ``state.db.damaged-<time>``, and the new one takes its place; what could not be copied is reported.
A repaired session whose last turn was cut short is closed by the usual repair when it is next loaded
(docs/architecture.md §7.7). Blocking; ``--check`` says when to run it. This module and ``sqlite.py`` are the only
ones that touch the file.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from hermes_acp import anchored
from hermes_acp.errors import StorageError

from .migrations import migrate

__all__ = ["RepairReport", "repair_store"]

_COLUMNS = "id, cwd, title, created_at, updated_at, parent_id, mode_id, model_id, archived, meta"
_EVENT_COLUMNS = "session_id, seq, turn_id, kind, payload_json, created_at"


@dataclass
class RepairReport:
    kept_as: Path
    sessions: int = 0
    events: int = 0
    cut_sessions: list[str] = field(default_factory=list)
    """Sessions whose events could be read only up to a damaged page."""
    lost_sessions: int = 0
    """Sessions with events but no readable record (their history cannot be shown without one)."""

    def describe(self) -> str:
        lines = [f"copied {self.sessions} session(s) and {self.events} event(s); the damaged file is {self.kept_as}"]
        if self.cut_sessions:
            lines.append(f"{len(self.cut_sessions)} session(s) lost their events after a damaged page: "
                         + ", ".join(self.cut_sessions[:10]))  # fmt: skip
        if self.lost_sessions:
            lines.append(f"{self.lost_sessions} session(s) had no readable record and were not copied")
        return "\n".join(lines)


def repair_store(path: Path) -> RepairReport:
    """See the module docstring; raises ``StorageError`` when the store cannot be repaired now."""
    if not path.is_file():
        raise StorageError(f"there is no session store at {path}")
    _refuse_if_in_use(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    fresh = path.with_name(f"{path.name}.repairing")
    folder = path.parent
    anchored.remove_file(folder, fresh)
    os.close(anchored.open_fd(folder, fresh, os.O_RDWR | os.O_CREAT | os.O_EXCL))  # 0600, like the store
    source = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    target = sqlite3.connect(fresh, isolation_level=None)
    try:
        migrate(target)
        report = RepairReport(kept_as=path.with_name(f"{path.name}.damaged-{stamp}"))
        target.execute("BEGIN")
        ids = _copy_sessions(source, target, report)
        report.lost_sessions = len(_session_ids_of_events(source) - ids)
        for session_id in sorted(ids):
            _copy_events(source, target, session_id, report)
        target.execute("COMMIT")
    finally:
        source.close()
        target.close()
    for suffix in ("", "-wal", "-shm"):
        old = path.with_name(path.name + suffix)
        if anchored.lstat(folder, old) is not None:
            anchored.rename(folder, old, report.kept_as.with_name(report.kept_as.name + suffix))
    anchored.rename(folder, fresh, path)
    return report


def _refuse_if_in_use(path: Path) -> None:
    """An exclusive lock, taken and given back at once: it fails while another process has the store open."""
    try:
        db = sqlite3.connect(path, timeout=0.5, isolation_level=None)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open {path} to repair it: {exc}") from exc
    try:
        db.execute("BEGIN EXCLUSIVE")
        db.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise StorageError(
                f"{path} is in use by a running hermes-acp: close the editor's agent (and `hermes-acp host stop`),"
                " then repair it",
                cause="locked",
            ) from exc
    finally:
        with contextlib.suppress(sqlite3.Error):
            db.close()


def _copy_sessions(source: sqlite3.Connection, target: sqlite3.Connection, report: RepairReport) -> set[str]:
    copied: set[str] = set()
    try:
        cursor = source.execute(f"SELECT {_COLUMNS} FROM sessions")
        for row in cursor:
            target.execute(f"INSERT OR IGNORE INTO sessions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
            copied.add(str(row[0]))
    except sqlite3.DatabaseError:
        pass  # the records after a damaged page of the table
    report.sessions = len(copied)
    return copied


def _session_ids_of_events(source: sqlite3.Connection) -> set[str]:
    found: set[str] = set()
    with contextlib.suppress(sqlite3.DatabaseError):
        for (session_id,) in source.execute("SELECT DISTINCT session_id FROM events"):
            found.add(str(session_id))
    return found


def _copy_events(source: sqlite3.Connection, target: sqlite3.Connection, session_id: str, report: RepairReport) -> None:
    query = f"SELECT {_EVENT_COLUMNS} FROM events WHERE session_id = ? ORDER BY seq"
    try:
        for row in source.execute(query, (session_id,)):
            target.execute(f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)", row)
            report.events += 1
    except sqlite3.DatabaseError:
        report.cut_sessions.append(session_id)
