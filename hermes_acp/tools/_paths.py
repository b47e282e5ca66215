"""Paths as the file tools see them: how a path is shown (relative to the session's cwd when inside it; a name with
bytes that are not UTF-8 or with invisible characters shown with ``\\xNN`` / ``\\uNNNN`` escapes, so it can always
be encoded and nothing hides in it), which
paths an approval request names (the path and, when a symlink leads elsewhere, its real target, so the policy
judges where a call really reaches), the ``read`` approval of the read-only file tools, and a helpful
message for a path that does not exist.

No policy decisions here (``policy`` makes them) and no reading or writing of file contents.
"""

from __future__ import annotations

import difflib
import os
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

from hermes_acp.core.sanitize import escape_hidden
from hermes_acp.errors import ToolInputError

from .approval import Approval
from .context import ApprovalRequest, ToolContext, Workspace

__all__ = [
    "ESCAPED_NOTE",
    "display_path",
    "escaped",
    "missing_path_error",
    "policy_paths",
    "read_approval",
    "shown_name",
]

ESCAPED_NOTE = (
    "[Names with \\xNN or \\uNNNN escapes hold bytes that are not UTF-8 or invisible characters; they are shown,"
    " not usable as typed.]"
)


def shown_name(name: str) -> str:
    """A file name as the model and the editor see it (``escape_hidden``: lossless, always encodable)."""
    return escape_hidden(name)


def escaped(shown: str, name: str) -> bool:
    """Whether showing ``name`` as ``shown`` escaped something."""
    return shown != name


def display_path(path: Path, workspace: Workspace) -> str:
    """``path`` relative to the cwd when it lies under it (lexically), else absolute; names shown safely."""
    cwd = Path(os.path.normpath(workspace.cwd))
    try:
        relative = path.relative_to(cwd)
    except ValueError:
        return shown_name(str(path))
    text = relative.as_posix()
    return shown_name(text) if text else "."


def policy_paths(path: Path) -> tuple[Path, ...]:
    """The path and, when symlinks lead elsewhere, its real target: both are judged (inside? sensitive?)."""
    real = Path(os.path.realpath(path))
    return (path,) if real == path else (path, real)


def read_approval(ctx: ToolContext, path: Path, title: str, parsed: BaseModel) -> Approval[Any]:
    """The approval of a call that only reads ``path`` (the policy decides whether it asks)."""
    request = ApprovalRequest(
        scope="read",
        title=title,
        mutating=False,
        paths=policy_paths(path),
        raw_input=parsed.model_dump(exclude_none=True),
    )
    return Approval(ctx.tool_call_id, request=request)


async def missing_path_error(path: Path, shown: str, *, hint: str = "") -> ToolInputError:
    """A clear "does not exist" for the model, with close names from the same folder when there are some (the
    folders are looked at in a worker thread)."""
    return await anyio.to_thread.run_sync(partial(_missing_path_error, path, shown, hint))


def _missing_path_error(path: Path, shown: str, hint: str) -> ToolInputError:
    parent = path.parent
    if not parent.is_dir():
        nearest = parent
        while not nearest.is_dir() and nearest != nearest.parent:
            nearest = nearest.parent
        return ToolInputError(
            f"{shown} does not exist (there is no folder {parent}; the nearest existing one is {nearest}){hint}"
        )
    try:
        names = os.listdir(parent)
    except OSError:
        names = []
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    suggestion = ""
    if close:
        suggestion = "; similar names there: " + ", ".join(shown_name(name) for name in close)
    return ToolInputError(f"{shown} does not exist{suggestion}{hint}")
