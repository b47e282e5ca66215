"""Read → approve → verify: the one way the file tools change a file.

1. ``take_snapshot`` reads the file whole (through the editor when it offers ``fs/read_text_file``, so unsaved
   buffers count; else its exact bytes from the disk), refusing what must not be changed (a folder, a binary file,
   one over ``EDIT_MAX_BYTES``, invalid UTF-8 where the tool needs text).
2. ``plan_change`` turns the snapshot and the new text into the call's ``Approval``: the ``edit`` request showing
   the diff, and the ``PlannedChange`` (what the file held, hashed, and what it will hold), refusing new text over
   ``EDIT_MAX_BYTES`` or that cannot be encoded.
3. ``commit_change`` runs with the granted approval: it reads the file again, refuses to write when its hash is not
   the one the diff was computed from (someone changed it while the user looked), writes the approved text, and
   returns the change.

``inspect`` answers the questions every file tool asks first (exists? folder? binary? size?). Which calls need
approval is the policy's business; storing the change is the turn loop's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio

from hermes_acp.core import DiffBlock
from hermes_acp.errors import ToolError, ToolInputError

from ._disk import DISK, describe_os_error, files_for, make_folders
from ._paths import display_path, policy_paths
from ._text import Encoding, sniff
from .approval import Approval, FileSnapshot, PlannedChange
from .context import ApprovalRequest, ToolContext

__all__ = [
    "EDIT_MAX_BYTES",
    "FileFacts",
    "commit_change",
    "inspect",
    "plan_change",
    "take_snapshot",
]

Out = TypeVar("Out")
EDIT_MAX_BYTES = 1024 * 1024
"""Largest file write_file replaces or edit_file edits, and largest text either writes: the diff goes to the editor
and the session log, and the log keeps the old content of every change (``FileChange``)."""


@dataclass(frozen=True, slots=True)
class FileFacts:
    exists: bool
    is_dir: bool = False
    size: int = 0
    encoding: Encoding = "text"


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


def _too_large(shown: str, action: str, size: int) -> ToolInputError:
    return ToolInputError(
        f"{shown} is too large for {action} ({size} bytes; the limit is {EDIT_MAX_BYTES} bytes)."
        " Change it with a terminal command (sed, a script) instead"
    )


def _read_bytes(path: Path) -> bytes:
    """At most one byte over the limit (a file that grew since it was measured is caught, not read whole)."""
    with path.open("rb") as handle:
        return handle.read(EDIT_MAX_BYTES + 1)


async def take_snapshot(ctx: ToolContext, path: Path, shown: str, *, action: str, need_utf8: bool) -> FileSnapshot:
    """The file's whole content before a change (``data`` None when it does not exist), refusing what must not be
    changed."""
    facts = await inspect(path, shown)
    if not facts.exists:
        return FileSnapshot.of(path, None)
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
        raise _too_large(shown, action, facts.size)
    io = files_for(ctx, path)
    if io is DISK:
        try:
            data = await anyio.to_thread.run_sync(_read_bytes, path)
        except OSError as exc:
            raise describe_os_error(exc, shown, "read") from exc
        snapshot = FileSnapshot.of(path, data)
    else:
        text = await io.read_text(path)
        snapshot = FileSnapshot.of(path, text.encode("utf-8", errors="replace"), text)
    assert snapshot.data is not None
    if len(snapshot.data) > EDIT_MAX_BYTES:
        raise _too_large(shown, action, len(snapshot.data))
    return snapshot


def plan_change(
    ctx: ToolContext,
    before: FileSnapshot,
    after: str,
    *,
    title: str,
    action: str,
    raw_input: Any,
    planned: Out | None = None,
) -> Approval[Out]:
    """The approval of writing ``after`` over ``before``: the ``edit`` question showing the diff, the change, and the
    result the tool reports once it is written (``planned``)."""
    shown = display_path(before.path, ctx.env.workspace)
    try:
        after_data = after.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolInputError(
            f"the new content of {shown} holds text that is not valid Unicode (a lone surrogate at character"
            f" {exc.start}); nothing was changed"
        ) from exc
    if len(after_data) > EDIT_MAX_BYTES:
        raise ToolInputError(
            f"the new content of {shown} is too large for {action} ({len(after_data)} bytes; the limit is"
            f" {EDIT_MAX_BYTES} bytes); nothing was changed"
        )
    judged = policy_paths(before.path)
    request = ApprovalRequest(
        scope="edit",
        title=title,
        mutating=True,
        paths=judged,
        content=[DiffBlock(path=str(before.path), old_text=before.text, new_text=after)],
        raw_input=raw_input,
    )
    change = PlannedChange(before, after, after_data, real=judged[-1])
    return Approval(ctx.tool_call_id, request=request, changes=(change,), planned=planned)


async def commit_change(ctx: ToolContext, approval: Approval[Any], *, action: str) -> PlannedChange:
    """Write the approved change, unless the file is no longer what the diff was computed from; the change."""
    if approval.granted is None or approval.tool_call_id != ctx.tool_call_id or len(approval.changes) != 1:
        raise ToolError(f"{action} ran without its own approval; nothing was written")
    change = approval.changes[0]
    path = change.before.path
    shown = display_path(path, ctx.env.workspace)
    now = await take_snapshot(ctx, path, shown, action=action, need_utf8=False)
    if now.digest != change.before.digest:
        what = "was created" if not change.before.exists else ("was deleted" if not now.exists else "changed")
        raise ToolError(
            f"{shown} {what} after this change was computed and shown for approval; nothing was written."
            " Read the file again and redo the change"
        )
    if change.changes_anything:
        io = files_for(ctx, path)
        if io is not DISK:
            await _make_parents(change.real or path, shown)
        await io.write_text(path, change.after, real=change.real)
    return change


async def _make_parents(path: Path, shown: str) -> None:
    """The editor's ``fs/write_text_file`` creates the file, not necessarily its folders (made without following a
    link, from the real path the approval judged)."""
    try:
        await anyio.to_thread.run_sync(partial(make_folders, path.parent))
    except OSError as exc:
        raise describe_os_error(exc, shown, "create the folders of") from exc
