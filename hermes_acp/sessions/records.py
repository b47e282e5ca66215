"""Checking a client's paths, and creating the record of a new session or of one made from another.

Used by ``SessionManager`` (new, fork, a subagent's child) and by a rewind (the session that keeps what it cut); the
paths' checks name the field in their error (``cwd``, ``additionalDirectories[0]``). A session made from another
records where it came from in the one shape the store knows (``Provenance``, in ``meta["provenance"]``: kind
``fork``, ``rewind`` or ``subagent``, the source's id, the message it was cut at or the call that made it when there
is one, when), beside ``parent_id``. It knows the store's record type, nothing else about sessions.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import anyio

from hermes_acp.core import ModeId, SubagentRole
from hermes_acp.core.ids import new_session_id
from hermes_acp.core.modes import DEFAULT_MODE
from hermes_acp.errors import InvalidParamsError
from hermes_acp.providers.effort import EFFORT_META_KEY
from hermes_acp.storage.base import PROVENANCE_KEY, Provenance, SessionRecord, utc_now

from .metadata import SYSTEM_PROMPT_META_KEY
from .switches import SWITCHES

__all__ = ["CARRIED_META", "child_record", "derived_record", "directories", "new_record", "normalise_cwd"]

CARRIED_META = (EFFORT_META_KEY, SYSTEM_PROMPT_META_KEY, *(switch.id for switch in SWITCHES))
"""What a session made from another takes over from its record's ``meta`` (beside the directories): the thinking
effort, the client's system prompt, the switches."""


def normalise_cwd(cwd: str, field: str = "cwd") -> str:
    """The realpath of an absolute directory; a relative, unreadable or missing path is an invalid-params error."""
    if not isinstance(cwd, str) or not cwd:
        raise InvalidParamsError(f"{field}: must be a non-empty absolute path", field=field)
    if "\x00" in cwd:
        raise InvalidParamsError(f"{field}: must not contain a NUL character", field=field)
    if not os.path.isabs(cwd):
        raise InvalidParamsError(f"{field}: must be an absolute path, got {cwd!r}", field=field)
    try:
        return os.path.realpath(cwd)
    except (OSError, ValueError) as exc:
        raise InvalidParamsError(f"{field}: {cwd!r} cannot be resolved: {_reason(exc)}", field=field) from exc


def directories(paths: Sequence[str] | None, field: str = "additionalDirectories") -> list[str]:
    return [normalise_cwd(p, f"{field}[{i}]") for i, p in enumerate(paths or [])]


async def new_record(cwd: str, additional: Sequence[str] | None, model_id: str | None) -> SessionRecord:
    """A fresh session's record: checked, normalised paths, the default mode and the given model."""
    real = normalise_cwd(cwd)
    try:
        is_dir = await anyio.Path(real).is_dir()
    except (OSError, ValueError) as exc:
        raise InvalidParamsError(f"cwd: {cwd!r} cannot be checked: {_reason(exc)}", field="cwd") from exc
    if not is_dir:
        raise InvalidParamsError(f"cwd: {cwd!r} is not an existing directory", field="cwd")
    now = utc_now()
    return SessionRecord(
        id=new_session_id(),
        cwd=real,
        created_at=now,
        updated_at=now,
        mode_id=DEFAULT_MODE,
        model_id=model_id,
        meta={"additional_directories": directories(additional)},
    )


def derived_record(
    source: SessionRecord,
    *,
    kind: Literal["fork", "rewind"],
    title: str | None,
    cwd: str | None = None,
    additional: list[str] | None = None,
    message_id: str | None = None,
    meta: dict[str, Any] | None = None,
) -> SessionRecord:
    """A new record made from ``source`` (a fork, or what a rewind cut): its mode, model and carried ``meta``, a
    fresh id, ``parent_id`` and the provenance. ``meta`` is added last (a client's system prompt for a fork)."""
    now = utc_now()
    provenance = Provenance(kind=kind, session_id=source.id, at=now, message_id=message_id)
    extra = additional if additional is not None else source.meta.get("additional_directories", [])
    return SessionRecord(
        id=new_session_id(),
        cwd=cwd or source.cwd,
        created_at=now,
        updated_at=now,
        mode_id=source.mode_id,
        model_id=source.model_id,
        title=title,
        parent_id=source.id,
        meta={
            "additional_directories": extra,
            **({"forked_from": {"sessionId": source.id, "at": now}} if kind == "fork" else {}),
            PROVENANCE_KEY: provenance.as_meta(),
            **{key: source.meta[key] for key in CARRIED_META if key in source.meta},
            **(meta or {}),
        },
    )


def child_record(
    parent: SessionRecord,
    additional: Sequence[Path],
    *,
    tool_call_id: str,
    mode_id: ModeId,
    model_id: str | None,
    title: str,
    role: SubagentRole,
    depth: int,
) -> SessionRecord:
    """The record of a subagent of ``parent`` (made by its ``delegate`` call ``tool_call_id``): the parent's
    directories and switches, its own mode, model, title, role and depth."""
    now = utc_now()
    provenance = Provenance(kind="subagent", session_id=parent.id, at=now, tool_call_id=tool_call_id)
    return SessionRecord(
        id=new_session_id(),
        cwd=parent.cwd,
        created_at=now,
        updated_at=now,
        mode_id=mode_id,
        model_id=model_id,
        title=title,
        parent_id=parent.id,
        meta={
            "additional_directories": [str(p) for p in additional],
            PROVENANCE_KEY: provenance.as_meta(),
            "subagent": {"role": role, "depth": depth},
            **{switch.id: parent.meta[switch.id] for switch in SWITCHES if switch.id in parent.meta},
        },
    )


def _reason(exc: OSError | ValueError) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
