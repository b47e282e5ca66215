"""Identifier factories for sessions, turns, messages and tool calls.

Ids are opaque strings. Tool-call ids normally come from the provider (docs/architecture.md §4.4); ``new_tool_call_id``
is only for a provider that gave none or a duplicate.
"""

from __future__ import annotations

import uuid

__all__ = [
    "new_compaction_id",
    "new_input_id",
    "new_message_id",
    "new_session_id",
    "new_tool_call_id",
    "new_turn_id",
]


def new_session_id() -> str:
    return str(uuid.uuid4())


def new_turn_id() -> str:
    return f"turn_{uuid.uuid4().hex[:16]}"


def new_message_id() -> str:
    return str(uuid.uuid4())


def new_tool_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def new_compaction_id() -> str:
    return f"compaction_{uuid.uuid4().hex[:16]}"


def new_input_id() -> str:
    """A queued prompt's or a steering message's (``InputQueued``)."""
    return f"input_{uuid.uuid4().hex[:16]}"
