"""The session store seam: session rows and their append-only event logs.

``SessionStore`` is what the session layer talks to; ``SqliteSessionStore`` is the real one and
``InMemorySessionStore`` the double shipped beside it. Records are plain data; this module knows no SQL, no ACP and
nothing about what a session does.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, get_args

import structlog
from pydantic_core import PydanticSerializationError

from hermes_acp.core import SessionEvent, SessionEventAdapter
from hermes_acp.core.sanitize import sanitize_json
from hermes_acp.errors import InvalidParamsError

__all__ = [
    "PAGE_SIZE",
    "PROVENANCE_KEY",
    "ArchiveFilter",
    "Provenance",
    "ProvenanceKind",
    "SessionPage",
    "SessionRecord",
    "SessionStore",
    "StoredEvent",
    "decode_cursor",
    "encode_cursor",
    "encode_event",
    "utc_now",
]

PAGE_SIZE = 50
ArchiveFilter = Literal["exclude", "include", "only"]
"""Which sessions a listing returns by their archive state (deleted sessions are never listed)."""
PROVENANCE_KEY = "provenance"
"""The key of ``SessionRecord.meta`` that says where a session came from (``Provenance``)."""
ProvenanceKind = Literal["subagent", "fork", "rewind"]
_log = structlog.get_logger("hermes_acp.storage")


def utc_now() -> str:
    """A sortable UTC timestamp with microseconds, e.g. ``2026-11-29T17:34:00.123456Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One session row. ``cwd`` is stored normalised (realpath) so list filters compare like with like."""

    id: str
    cwd: str
    created_at: str
    updated_at: str
    mode_id: str
    model_id: str | None = None
    title: str | None = None
    parent_id: str | None = None
    archived: bool = False
    """Hidden from ``session/list`` unless asked for (``session/archive``)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Additional directories, fork and rewind provenance, the thinking effort, the client's system prompt, where
    the title came from."""
    deleted: bool = False
    """``session/delete``: never listed again; the log is kept and still loads by id."""

    @property
    def provenance(self) -> Provenance | None:
        """Where the session came from, when another session made it (``meta["provenance"]``)."""
        return Provenance.from_meta(self.meta.get(PROVENANCE_KEY))


@dataclass(frozen=True, slots=True)
class Provenance:
    """Which session a session came from, and how: a ``subagent`` a tool call of ``session_id`` delegated to, a
    ``fork`` of it, the tail of it a ``rewind`` moved out. Stored in the record's ``meta`` (one shape for every
    kind), with ``parent_id`` set to ``session_id``; ``session/list`` leaves subagents out unless asked."""

    kind: ProvenanceKind
    session_id: str
    at: str
    tool_call_id: str | None = None
    """The call that made the session (a subagent's ``delegate`` call)."""
    message_id: str | None = None
    """The message the session starts from (a rewind's)."""

    def as_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"kind": self.kind, "sessionId": self.session_id, "at": self.at}
        if self.tool_call_id is not None:
            meta["toolCallId"] = self.tool_call_id
        if self.message_id is not None:
            meta["messageId"] = self.message_id
        return meta

    @classmethod
    def from_meta(cls, raw: object) -> Provenance | None:
        """The stored shape back; None when there is none or it is not one (a record written by hand)."""
        if not isinstance(raw, dict):
            return None
        kind, session_id, at = raw.get("kind"), raw.get("sessionId"), raw.get("at")
        kinds: tuple[ProvenanceKind, ...] = get_args(ProvenanceKind)
        known = next((k for k in kinds if k == kind), None)
        if known is None or not isinstance(session_id, str) or not isinstance(at, str):
            return None
        tool_call_id, message_id = raw.get("toolCallId"), raw.get("messageId")
        return cls(
            kind=known,
            session_id=session_id,
            at=at,
            tool_call_id=tool_call_id if isinstance(tool_call_id, str) else None,
            message_id=message_id if isinstance(message_id, str) else None,
        )


@dataclass(frozen=True, slots=True)
class StoredEvent:
    seq: int
    created_at: str
    event: SessionEvent


@dataclass(frozen=True, slots=True)
class SessionPage:
    sessions: list[SessionRecord]
    next_cursor: str | None


def encode_event(event: SessionEvent) -> tuple[SessionEvent, str]:
    """The event as it will be stored, and its JSON payload.

    Text that reaches the log was cleaned where it entered (frames, model streams, tool results, file names), so this
    is the last line of defence, and costs nothing when it is not needed: an event that cannot be encoded (a lone
    surrogate is not UTF-8) is cleaned by the one sanitizer and stored as cleaned, rather than failing the write and
    with it the turn. The cleaned event is returned so the caller shows what was stored."""
    try:
        return event, event.model_dump_json()
    except PydanticSerializationError:
        cleaned, removals = sanitize_json(event.model_dump())
        stored: SessionEvent = SessionEventAdapter.validate_python(cleaned)
        _log.warning("unencodable text made safe before storing", kind=event.kind, removed=removals.as_log())
        return stored, stored.model_dump_json()


def encode_cursor(updated_at: str, session_id: str) -> str:
    raw = json.dumps([updated_at, session_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str]:
    """Inverse of ``encode_cursor``; anything else is an invalid-params error naming the field."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidParamsError("cursor: not a cursor this agent issued", field="cursor") from exc
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
        raise InvalidParamsError("cursor: not a cursor this agent issued", field="cursor")
    return value[0], value[1]


class SessionStore(Protocol):
    """Durable sessions. Every method is safe to await from the event loop: nothing blocks it."""

    read_only: str | None
    """Why the store can only be read (every write then raises ``StorageError`` with cause ``read_only``); None
    when it can be written."""

    async def create_session(self, record: SessionRecord) -> None: ...

    async def get_session(self, session_id: str) -> SessionRecord | None: ...

    async def update_session(self, session_id: str, **changes: Any) -> SessionRecord:
        """Change ``mode_id``, ``model_id``, ``title``, ``archived``, ``deleted``, ``cwd`` or ``meta``; bumps
        ``updated_at``."""
        ...

    async def append_events(self, session_id: str, events: Sequence[SessionEvent]) -> list[StoredEvent]:
        """Append in one transaction (all or nothing) and bump ``updated_at``; raises ``StorageError``."""
        ...

    async def load_events(self, session_id: str, *, after: int = 0) -> list[StoredEvent]:
        """The session's events in order: all of them, or those with a ``seq`` above ``after`` (what a client that
        saw up to ``after`` missed)."""
        ...

    async def list_sessions(
        self,
        *,
        cwd: str | None,
        cursor: str | None,
        limit: int = PAGE_SIZE,
        archived: ArchiveFilter = "exclude",
        subagents: bool = False,
    ) -> SessionPage:
        """Sessions not deleted, by ``archived`` (default: not archived), newest activity first, ``limit`` per page,
        optionally only those with ``cwd``; subagents (``Provenance`` kind ``subagent``) only with ``subagents``."""
        ...

    async def fork_session(self, source_id: str, record: SessionRecord, *, until_seq: int | None = None) -> None:
        """Create ``record`` with a copy of the events of ``source_id``: every one, or those up to ``until_seq``."""
        ...

    async def aclose(self) -> None: ...
