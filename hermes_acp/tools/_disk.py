"""Text files on the local disk, behind the same ``EditorFiles`` port as the editor's ``fs/*`` methods, and the
choice between the two for one path.

``DiskFiles`` reads a window of lines without loading the whole file (``line``/``limit`` as in
``fs/read_text_file``, a byte budget for a window) and writes atomically: a temporary file in the same folder, then
a rename, so a failed write leaves the old file untouched; permissions kept. A symlink is written through only as
the approval resolved it: the write goes to the real path the policy judged (``real``), reached from the
file-system root one component at a time without following any link (``hermes_acp.anchored``, invariant 21), so a
folder swapped for a link after the approval is refused, never followed. Workspace files are not ``fsync``-ed (an
editor's save is not either). OS errors become ``ToolError``s that say what went wrong. Blocking calls run in a
worker thread.

``files_for`` picks the editor for paths inside the session's directories when it offers ``fs/*``, else the disk.
Nothing here decides whether a call is allowed.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from pathlib import Path

import anyio

from hermes_acp import anchored
from hermes_acp.errors import ToolError, ToolInputError

from .context import EditorFiles, ToolContext

__all__ = [
    "DISK",
    "WINDOW_MAX_BYTES",
    "DiskFiles",
    "count_lines",
    "describe_os_error",
    "files_for",
    "make_folders",
    "write_atomically",
]

WINDOW_MAX_BYTES = 8 * 1024 * 1024
"""Most bytes one windowed read (``limit`` given) returns; callers cap far below it."""
_CHUNK = 64 * 1024
_COUNT_MAX_BYTES = 64 * 1024 * 1024


def _current_umask() -> int:
    """The process umask, read without changing it where Linux tells it (``os.umask`` sets while it reads)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_NEW_FILE_MODE = 0o666 & ~_current_umask()
_NEW_FOLDER_MODE = 0o777 & ~_current_umask()


def describe_os_error(exc: OSError, shown: str, action: str) -> ToolError:
    """An ``OSError`` as a tool error naming the path and the action."""
    if isinstance(exc, anchored.Refused):
        return ToolError(
            f"cannot {action} {shown}: {exc} (a folder or file on the way changed since the call was approved);"
            " nothing was written"
        )
    if isinstance(exc, FileNotFoundError):
        return ToolInputError(f"{shown} does not exist")
    if isinstance(exc, IsADirectoryError):
        return ToolInputError(f"{shown} is a folder, not a file")
    if isinstance(exc, NotADirectoryError):
        return ToolInputError(f"cannot {action} {shown}: part of the path is a file, not a folder")
    if isinstance(exc, PermissionError):
        return ToolError(f"permission denied: cannot {action} {shown}")
    if exc.errno == errno.ENOSPC:
        return ToolError(f"cannot {action} {shown}: no space left on the device")
    return ToolError(f"cannot {action} {shown}: {exc.strerror or exc}")


def _read(path: Path, line: int | None, limit: int | None) -> str:
    start = max(1, line or 1)
    out = bytearray()
    with path.open("rb") as handle:
        skipped = 0
        while skipped < start - 1:
            chunk = handle.readline(_CHUNK)
            if not chunk:
                return ""
            if chunk.endswith(b"\n"):
                skipped += 1
        if limit is None:
            out += handle.read()
        else:
            taken = 0
            while taken < limit and len(out) < WINDOW_MAX_BYTES:
                chunk = handle.readline(_CHUNK)
                if not chunk:
                    break
                out += chunk
                if chunk.endswith(b"\n"):
                    taken += 1
    return out.decode("utf-8", errors="replace")


def _write(path: Path, content: str, real: Path | None) -> None:
    write_atomically(real or Path(os.path.realpath(path)), content.encode("utf-8"))


def write_atomically(target: Path, data: bytes, *, roots: Sequence[Path] = ()) -> None:
    """Write ``data`` to ``target`` whole: a temporary file beside it, then a rename (so a crash leaves the old file
    or the new one, never half of one). ``target`` is reached from the deepest of ``roots`` holding it (else the
    file-system root: give it with its links resolved) without following a link; a link or a folder where the file
    or one of its folders should be is ``anchored.Refused``. A file that exists keeps its permissions; new files and
    folders get the usual ones of the umask."""
    anchor = anchored.anchor_for(target, roots)
    anchored.write_file(anchor, target, data, new_mode=_NEW_FILE_MODE, folders=_NEW_FOLDER_MODE, durable=False)


def make_folders(target: Path, *, roots: Sequence[Path] = ()) -> None:
    """Create the missing folders of ``target`` (anchored like ``write_atomically``), with the umask's usual mode."""
    anchored.make_folders(anchored.anchor_for(target, roots), target, mode=_NEW_FOLDER_MODE)


def count_lines(path: Path) -> int | None:
    """Lines in the file as editors count them; None when it is too big to count cheaply or unreadable."""
    try:
        if path.stat().st_size > _COUNT_MAX_BYTES:
            return None
        count = 0
        last = b""
        with path.open("rb") as handle:
            while chunk := handle.read(1024 * 1024):
                count += chunk.count(b"\n")
                last = chunk
    except OSError:
        return None
    return count + (1 if last and not last.endswith(b"\n") else 0)


class DiskFiles:
    """``EditorFiles`` on the local disk."""

    async def read_text(self, path: Path, *, line: int | None = None, limit: int | None = None) -> str:
        try:
            return await anyio.to_thread.run_sync(_read, path, line, limit)
        except OSError as exc:
            raise describe_os_error(exc, str(path), "read") from exc

    async def write_text(self, path: Path, content: str, *, real: Path | None = None) -> None:
        try:
            await anyio.to_thread.run_sync(_write, path, content, real)
        except OSError as exc:
            raise describe_os_error(exc, str(path), "write") from exc


DISK = DiskFiles()


def files_for(ctx: ToolContext, path: Path) -> EditorFiles:
    """The editor's ``fs/*`` for paths inside the session's directories when it offers them; else the disk."""
    if ctx.files is not None and ctx.env.workspace.contains(path):
        return ctx.files
    return DISK
