"""``read_file`` and ``write_file``: whole text files in and out, through the editor when it offers ``fs/*``.

``read_file`` returns numbered lines, a window at a time (``line``, ``limit``), capped in lines and characters with
a note saying where to continue; binary files are refused, invalid UTF-8 is shown with replacement characters and
said so. ``write_file`` creates or replaces a file (parent folders created), shows the diff ``{path, oldText (null
for a new file), newText}`` in the permission request and in the result, and refuses to write when the file changed
after the diff was shown (the file tools' one read → approve → verify path, ``_snapshot``). Which calls need
approval is the policy's business: these tools only name the paths.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from hermes_acp.core import DiffBlock, Location, TextBlock, TextPart
from hermes_acp.errors import ToolInputError

from ._disk import DISK, count_lines, files_for
from ._paths import display_path, missing_path_error, read_approval
from ._snapshot import commit_change, inspect, plan_change, take_snapshot
from ._text import plural, split_lines
from .approval import Approval
from .base import Presentation, ToolOutcome, TypedTool
from .context import ToolContext

__all__ = [
    "READ_DEFAULT_LINES",
    "READ_MAX_CHARS",
    "READ_MAX_LINE_CHARS",
    "ReadFileTool",
    "WriteFileTool",
    "WriteOutput",
]

READ_DEFAULT_LINES = 2000
READ_MAX_CHARS = 60_000
READ_MAX_LINE_CHARS = 2000


class _ReadInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1, description="The file's path.")
    line: int | None = Field(default=None, ge=1, description="First line to read (1-based). Default 1.")
    limit: int | None = Field(
        default=None, ge=1, le=READ_DEFAULT_LINES, description=f"Lines to read. Default {READ_DEFAULT_LINES}."
    )


def _read_title(parsed: _ReadInput, shown: str) -> str:
    if parsed.limit is not None:
        start = parsed.line or 1
        return f"Read {shown} (lines {start}-{start + parsed.limit - 1})"
    if parsed.line is not None and parsed.line > 1:
        return f"Read {shown} (from line {parsed.line})"
    return f"Read {shown}"


def _shorten_line(line: str) -> str:
    if len(line) <= READ_MAX_LINE_CHARS:
        return line
    return f"{line[:READ_MAX_LINE_CHARS]} … [line cut: {len(line) - READ_MAX_LINE_CHARS} more characters]"


async def _total_lines(path: Path, from_disk: bool) -> int | None:
    """The file's line count when it was read from disk (an editor buffer may differ from the disk)."""
    return await anyio.to_thread.run_sync(count_lines, path) if from_disk else None


class ReadFileTool(TypedTool[_ReadInput, dict[str, Any]]):
    name = "read_file"
    description = (
        "Read a text file. Returns its lines prefixed with their line number and a tab (the prefix is not part of"
        f" the file). Reads up to {READ_DEFAULT_LINES} lines from `line`; long files say how to read on."
    )
    Input = _ReadInput
    read_only = True

    def reads_only(self, parsed: _ReadInput) -> bool:
        return True

    def present(self, parsed: _ReadInput, ctx: ToolContext) -> Presentation:
        path = ctx.env.workspace.resolve(parsed.path)
        title = _read_title(parsed, display_path(path, ctx.env.workspace))
        return Presentation(title=title, kind="read", locations=[Location(path=str(path), line=parsed.line)])

    async def approval(self, parsed: _ReadInput, ctx: ToolContext) -> Approval[dict[str, Any]]:
        path = ctx.env.workspace.resolve(parsed.path)
        return read_approval(ctx, path, _read_title(parsed, display_path(path, ctx.env.workspace)), parsed)

    async def run(
        self, parsed: _ReadInput, approval: Approval[dict[str, Any]], ctx: ToolContext
    ) -> ToolOutcome[dict[str, Any]]:
        path = ctx.env.workspace.resolve(parsed.path)
        shown = display_path(path, ctx.env.workspace)
        facts = await inspect(path, shown)
        if not facts.exists:
            raise await missing_path_error(path, shown)
        if facts.is_dir:
            raise ToolInputError(f"{shown} is a folder; use list_files to see what it holds")
        if facts.encoding == "binary":
            raise ToolInputError(f"{shown} is a binary file ({facts.size} bytes); read_file reads text files only")
        start = parsed.line or 1
        wanted = parsed.limit or READ_DEFAULT_LINES
        io = files_for(ctx, path)
        lines = split_lines(await io.read_text(path, line=start, limit=wanted + 1))
        if not lines:
            if start > 1:
                total = await _total_lines(path, io is DISK)
                size = f" (it has {plural(total, 'line')})" if total is not None else ""
                raise ToolInputError(f"line {start} is past the end of {shown}{size}")
            text = f"{shown} is empty."
            return ToolOutcome(
                parts=[TextPart(text=text)],
                content=[TextBlock(text=text)],
                raw_output={"path": str(path), "lines": 0},
            )
        more = len(lines) > wanted
        numbered: list[str] = []
        used = 0
        capped = False
        for offset, line in enumerate(lines[:wanted]):
            entry = f"{start + offset:>6}\t{_shorten_line(line)}"
            if numbered and used + len(entry) + 1 > READ_MAX_CHARS:
                capped = True
                break
            numbered.append(entry)
            used += len(entry) + 1
        end = start + len(numbered) - 1
        total = await _total_lines(path, io is DISK) if capped or more else end
        notes: list[str] = []
        if facts.encoding == "not_utf8":
            notes.append("[The file is not valid UTF-8: undecodable bytes are shown as �.]")
        of_total = f" of {total}" if total is not None else ""
        if capped:
            notes.append(
                f"[Output capped at {READ_MAX_CHARS} characters: showing lines {start}-{end}{of_total}."
                f" Call read_file with line={end + 1} to read on.]"
            )
        elif more:
            notes.append(f"[Showing lines {start}-{end}{of_total}. Call read_file with line={end + 1} to read on.]")
        text = "\n".join(numbered + notes)
        summary = f"Read lines {start}-{end}{of_total}" + (" (more follow)" if capped or more else "")
        return ToolOutcome(
            parts=[TextPart(text=text)],
            content=[TextBlock(text=summary)],
            raw_output={"path": str(path), "start_line": start, "end_line": end, "more": capped or more},
        )


class _WriteInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1, description="The file's path.")
    content: str = Field(description="The complete new content of the file.")


class WriteOutput(BaseModel):
    """What ``write_file`` reports for the record."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    path: str
    created: bool


class WriteFileTool(TypedTool[_WriteInput, WriteOutput]):
    name = "write_file"
    description = (
        "Create a file, or replace a file's whole content (parent folders are created). To change part of an"
        " existing file, use edit_file."
    )
    Input = _WriteInput
    read_only = False

    def present(self, parsed: _WriteInput, ctx: ToolContext) -> Presentation:
        path = ctx.env.workspace.resolve(parsed.path)
        return Presentation(
            title=f"Write {display_path(path, ctx.env.workspace)}", kind="edit", locations=[Location(path=str(path))]
        )

    async def approval(self, parsed: _WriteInput, ctx: ToolContext) -> Approval[WriteOutput]:
        path = ctx.env.workspace.resolve(parsed.path)
        shown = display_path(path, ctx.env.workspace)
        before = await take_snapshot(ctx, path, shown, action="write_file", need_utf8=False)
        return plan_change(
            ctx, before, parsed.content, title=f"Write {shown}", action="write_file", raw_input=parsed.model_dump()
        )

    async def run(
        self, parsed: _WriteInput, approval: Approval[WriteOutput], ctx: ToolContext
    ) -> ToolOutcome[WriteOutput]:
        change = await commit_change(ctx, approval, action="write_file")
        before = change.before
        shown = display_path(before.path, ctx.env.workspace)
        new_lines = len(split_lines(change.after))
        if not change.changes_anything:
            text = f"{shown} already has this content; nothing changed."
        elif before.text is None:
            text = f"Created {shown} ({plural(new_lines, 'line')})."
        else:
            text = f"Wrote {shown} ({plural(new_lines, 'line')}; it had {len(split_lines(before.text))})."
        return ToolOutcome(
            parts=[TextPart(text=text)],
            content=[DiffBlock(path=str(before.path), old_text=before.text, new_text=change.after)],
            raw_output=WriteOutput(path=str(before.path), created=not before.exists),
        )
