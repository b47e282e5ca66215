"""Durable sessions: the ``SessionStore`` seam, its SQLite implementation and an in-memory double."""

from .base import (
    PAGE_SIZE,
    SessionPage,
    SessionRecord,
    SessionStore,
    StoredEvent,
    decode_cursor,
    encode_cursor,
    utc_now,
)
from .memory import InMemorySessionStore
from .sqlite import SqliteSessionStore

__all__ = [
    "PAGE_SIZE",
    "InMemorySessionStore",
    "SessionPage",
    "SessionRecord",
    "SessionStore",
    "SqliteSessionStore",
    "StoredEvent",
    "decode_cursor",
    "encode_cursor",
    "utc_now",
]
