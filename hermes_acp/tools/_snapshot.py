"""What a file holds before a write or an edit, and the check that it still holds that when the change runs.

``write_file`` and ``edit_file`` compute their diff at approval time from ``read_current`` (through the editor when
it offers ``fs/read_text_file``, so unsaved buffers count), keep it as a ``Snapshot``, and ``ensure_unchanged``
refuses to write if the file changed while the user was looking at the diff; ``edit_request`` is the approval
request both build around that diff. ``inspect`` answers the questions every file tool asks first (exists? folder?
binary? size?). Nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import anyio
from pydantic import BaseModel

from hermes_acp.core import DiffBlock
from hermes_acp.errors import ToolError, ToolInputError

from ._disk import describe_os_error, files_for
from ._paths import policy_paths
from ._text import Encoding, sniff
from .context import ApprovalRequest, ToolContext

__all__ = [
    "EDIT_MAX_BYTES",
    "FileFacts",
    "Snapshot",
    "edit_request",
    "ensure_unchanged",
    "inspect",
    "read_current",
]

EDIT_MAX_BYTES = 1024 * 1024
"""Largest file write_file replaces or edit_file edits (the diff goes to the editor and the session log)."""


@dataclass(frozen=True, slots=True)
class FileFacts:
    exists: bool
    is_dir: bool = False
    size: int = 0
    encoding: Encoding = "text"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The file's text when the diff was computed; None: it did not exist."""

    text: str | None


def _inspect(path: Path) -> FileFacts:
    if not path.exists():
        return FileFacts(exists=False)
    if path.is_dir():
        return FileFacts(exists=True, is_dir=True)
    size = path.stat().st_size
    return FileFacts(exists=True, size=size, encoding=sniff(path))


async def inspect(path: Path, shown: str) -> FileFacts:
    try:
        return await anyio.to_thread.run_sync(_inspect, path)
    except OSError as exc:
        raise describe_os_error(exc, shown, "read") from exc


async def read_current(ctx: ToolContext, path: Path, shown: str, *, action: str, need_utf8: bool) -> str | None:
    """The file's whole text before a change (None when it does not exist), refusing what must not be changed."""
    facts = await inspect(path, shown)
    if not facts.exists:
        return None
    if facts.is_dir:
        raise ToolInputError(f"{shown} is a folder; {action} works on files")
    if facts.encoding == "binary":
        raise ToolInputError(f"{shown} is a binary file ({facts.size} bytes); {action} only changes text files")
    if facts.encoding == "not_utf8" and need_utf8:
        raise ToolInputError(
            f"{shown} is not valid UTF-8 text; {action} would corrupt it. Replace it whole with write_file,"
            " or convert it with a terminal command"
        )
    if facts.size > EDIT_MAX_BYTES:
        raise ToolInputError(
            f"{shown} is too large for {action} ({facts.size} bytes; the limit is {EDIT_MAX_BYTES} bytes)."
            " Change it with a terminal command (sed, a script) instead"
        )
    return await files_for(ctx, path).read_text(path)


def edit_request(path: Path, title: str, old_text: str | None, new_text: str, parsed: BaseModel) -> ApprovalRequest:
    """The approval request of a change to ``path``, showing its diff (``old_text`` None: a new file)."""
    return ApprovalRequest(
        scope="edit",
        title=title,
        mutating=True,
        paths=policy_paths(path),
        content=[DiffBlock(path=str(path), old_text=old_text, new_text=new_text)],
        raw_input=parsed.model_dump(),
    )


def ensure_unchanged(before: Snapshot | None, now: str | None, shown: str) -> None:
    if before is not None and before.text != now:
        what = "was created" if before.text is None else ("was deleted" if now is None else "changed")
        raise ToolError(
            f"{shown} {what} after this change was computed and shown for approval; nothing was written."
            " Read the file again and redo the change"
        )
