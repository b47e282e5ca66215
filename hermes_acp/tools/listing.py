"""``list_files``: what a folder holds (one level), or the files matching a glob under it (any depth).

Both honour ``.gitignore`` (the folder's and its parents' up to the repository root) and never show ``.git``. A glob
is gitignore-style: ``*.py`` matches at any depth, ``src/**/*.ts`` is relative to ``path``. Results are sorted and
bounded by ``limit`` with a note giving the total; the glob search runs on ripgrep when installed, else on the
Python walker, with the same results, within ``timeout_s`` (ripgrep past it fails the call, the walker answers what
it found and says so). Whether the call may run is the policy's business (a ``read`` of ``path``).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from hermes_acp.core import Location, TextBlock, TextPart, ToolKind
from hermes_acp.errors import ToolInputError

from ._disk import describe_os_error
from ._finder import AUTO, SEARCH_TIMEOUT_S, Finder, RipgrepChoice
from ._paths import ESCAPED_NOTE, display_path, missing_path_error, read_approval, shown_name
from ._text import fence, plural
from ._walk import Entry, list_dir
from .approval import Approval
from .base import Presentation, ToolOutcome, TypedTool
from .context import ToolContext

__all__ = ["LIST_DEFAULT_LIMIT", "LIST_MAX_LIMIT", "ListFilesTool"]

LIST_DEFAULT_LIMIT = 200
LIST_MAX_LIMIT = 1000
_COUNT_CAP = 20_000
"""Files counted for the "N of M" note before the walk stops."""


class _ListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(default=".", min_length=1, description="The folder.")
    glob: str | None = Field(
        default=None,
        min_length=1,
        description="List files matching this gitignore-style glob at any depth ('*.py', 'src/**/*.ts').",
    )
    limit: int = Field(default=LIST_DEFAULT_LIMIT, ge=1, le=LIST_MAX_LIMIT, description="Most entries to return.")


def _size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def _entry_line(entry: Entry) -> str:
    name = shown_name(entry.name)
    if entry.kind == "dir":
        return f"{name}/"
    if entry.kind == "link":
        return f"{name} -> {shown_name(entry.target or '')}"
    if entry.kind == "file":
        return f"{name}  ({_size(entry.size)})"
    return name


def _escapes(entry: Entry) -> bool:
    return shown_name(entry.name) != entry.name or shown_name(entry.target or "") != (entry.target or "")


class ListFilesTool(TypedTool[_ListInput, dict[str, Any]]):
    name = "list_files"
    description = (
        "List a folder's entries (one level; folders end with '/'), or with `glob` the files matching it under the"
        " folder at any depth. Honours .gitignore."
    )
    Input = _ListInput
    read_only = True

    def reads_only(self, parsed: _ListInput) -> bool:
        return True

    def __init__(self, *, ripgrep: RipgrepChoice = AUTO, timeout_s: float = SEARCH_TIMEOUT_S):
        self._finder = Finder(ripgrep, timeout_s=timeout_s)

    def _title(self, parsed: _ListInput, ctx: ToolContext) -> str:
        shown = display_path(ctx.env.workspace.resolve(parsed.path), ctx.env.workspace)
        return f"Find {parsed.glob} in {shown}" if parsed.glob else f"List {shown}"

    def present(self, parsed: _ListInput, ctx: ToolContext) -> Presentation:
        path = ctx.env.workspace.resolve(parsed.path)
        kind: ToolKind = "search" if parsed.glob else "read"
        return Presentation(title=self._title(parsed, ctx), kind=kind, locations=[Location(path=str(path))])

    async def approval(self, parsed: _ListInput, ctx: ToolContext) -> Approval[dict[str, Any]]:
        return read_approval(ctx, ctx.env.workspace.resolve(parsed.path), self._title(parsed, ctx), parsed)

    async def run(
        self, parsed: _ListInput, approval: Approval[dict[str, Any]], ctx: ToolContext
    ) -> ToolOutcome[dict[str, Any]]:
        path = ctx.env.workspace.resolve(parsed.path)
        shown = display_path(path, ctx.env.workspace)
        if not await anyio.to_thread.run_sync(path.exists):
            raise await missing_path_error(path, shown)
        if not await anyio.to_thread.run_sync(path.is_dir):
            raise ToolInputError(f"{shown} is a file, not a folder; read it with read_file")
        if parsed.glob:
            return await self._glob(parsed, ctx, path, shown, parsed.glob)
        try:
            entries, hidden = await anyio.to_thread.run_sync(partial(list_dir, path))
        except OSError as exc:
            raise describe_os_error(exc, shown, "list") from exc
        entries.sort(key=lambda e: (e.kind != "dir", e.name))
        lines = [_entry_line(e) for e in entries[: parsed.limit]]
        notes: list[str] = []
        if len(entries) > parsed.limit:
            notes.append(f"[Showing {parsed.limit} of {len(entries)} entries; raise limit or use a glob to narrow.]")
        if hidden:
            notes.append(f"[{plural(hidden, 'entry', 'entries')} ignored by .gitignore not shown.]")
        if any(_escapes(e) for e in entries[: parsed.limit]):
            notes.append(ESCAPED_NOTE)
        header = f"{shown if shown.endswith('/') else shown + '/'} ({plural(len(entries), 'entry', 'entries')})"
        text = "\n".join([header, *lines, *notes]) if lines else "\n".join([f"{shown} is empty.", *notes])
        return ToolOutcome(
            parts=[TextPart(text=text)],
            content=[TextBlock(text=fence(text))],
            raw_output={"path": str(path), "entries": len(entries), "ignored": hidden},
        )

    async def _glob(
        self, parsed: _ListInput, ctx: ToolContext, path: Path, shown: str, glob: str
    ) -> ToolOutcome[dict[str, Any]]:
        found, more, stopped_early = await self._finder.files(path, glob, cap=_COUNT_CAP)
        found.sort(key=str)
        lines = [display_path(p, ctx.env.workspace) for p in found[: parsed.limit]]
        escapes = any(shown_name(str(p)) != str(p) for p in found[: parsed.limit])
        total = f"more than {len(found)}" if more else (f"at least {len(found)}" if stopped_early else str(len(found)))
        notes: list[str] = []
        if lines and (more or len(found) > parsed.limit):
            notes.append(f"[Showing {len(lines)} of {total} files; narrow the glob or the path.]")
        if escapes:
            notes.append(ESCAPED_NOTE)
        if stopped_early:
            notes.append(
                f"[The listing stopped early, after {self._finder.timeout_s:g} s: files not reached yet are missing."
                " Narrow the glob or the path.]"
            )
        if not lines:
            text = "\n".join([f"No files match {glob!r} under {shown} (.gitignore honoured).", *notes])
        else:
            text = "\n".join([f"Files matching {glob!r} under {shown}: {total}", *lines, *notes])
        return ToolOutcome(
            parts=[TextPart(text=text)],
            content=[TextBlock(text=fence(text))],
            raw_output={
                "path": str(path),
                "glob": glob,
                "files": len(found),
                "more": more,
                "stopped_early": stopped_early,
            },
        )
