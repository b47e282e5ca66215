"""Versioned schema of the session store, applied in order and recorded in ``PRAGMA user_version``.

Add a migration by appending to ``MIGRATIONS``; never edit one that has shipped. This module only knows DDL.
"""

from __future__ import annotations

import sqlite3
from typing import Final

__all__ = ["MIGRATIONS", "migrate"]

MIGRATIONS: Final[tuple[str, ...]] = (
    # 1: sessions and their append-only event logs (docs/architecture.md §7.1).
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        cwd TEXT NOT NULL,
        title TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        parent_id TEXT,
        mode_id TEXT NOT NULL,
        model_id TEXT,
        archived INTEGER NOT NULL DEFAULT 0,
        meta TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX sessions_by_activity ON sessions (archived, updated_at DESC, id DESC);
    CREATE INDEX sessions_by_cwd ON sessions (archived, cwd, updated_at DESC, id DESC);
    CREATE TABLE events (
        session_id TEXT NOT NULL REFERENCES sessions (id),
        seq INTEGER NOT NULL,
        turn_id TEXT,
        kind TEXT NOT NULL,
        payload_json TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID;
    """,
    # 2: archiving apart from deleting (docs/architecture.md §6.1): until now session/delete set ``archived``, so
    # those rows become deleted ones; a deleted session is never listed, an archived one is on request.
    """
    ALTER TABLE sessions ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0;
    UPDATE sessions SET deleted = archived, archived = 0;
    CREATE INDEX sessions_listed ON sessions (deleted, archived, updated_at DESC, id DESC);
    """,
)


def migrate(db: sqlite3.Connection) -> None:
    """Bring the schema to the newest version; refuses a database written by a newer hermes-acp."""
    (version,) = db.execute("PRAGMA user_version").fetchone()
    if version > len(MIGRATIONS):
        raise sqlite3.DatabaseError(
            f"state.db has schema version {version}, newer than this hermes-acp understands ({len(MIGRATIONS)})"
        )
    for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
        db.executescript(f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {number};\nCOMMIT;")
