"""Checking a client's paths and creating the record of a new session.

Used by ``SessionManager.new_session``; the paths' checks name the field in their error (``cwd``,
``additionalDirectories[0]``). It knows the store's record type, nothing else about sessions.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import anyio

from hermes_acp.core.ids import new_session_id
from hermes_acp.core.modes import DEFAULT_MODE
from hermes_acp.errors import InvalidParamsError
from hermes_acp.storage.base import SessionRecord, utc_now

__all__ = ["directories", "new_record", "normalise_cwd"]


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


def _reason(exc: OSError | ValueError) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
