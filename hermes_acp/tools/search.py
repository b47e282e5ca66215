"""``search_files``: find lines matching a regular expression (or literal text) in the files under a path.

ripgrep runs the search when installed, else the pure-Python walker, with the same results (same files: hidden
included, ``.gitignore`` honoured, binary and >10 MiB files skipped; same lines; sorted by path and line). Python's
regex syntax is the contract: a pattern Python rejects is refused with the reason, one only Python accepts falls
back to the walker. Matches in sensitive files (``.env*``, private keys, credential folders) are left out: those
contents go to the model only through read_file, which asks. Output is bounded in matches, line length and size,
and the search in time (``timeout_s``): ripgrep past it fails the call, the walker answers what it found and says so.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from hermes_acp.core import Location, TextBlock, TextPart
from hermes_acp.errors import ToolInputError

from ._finder import AUTO, SEARCH_TIMEOUT_S, Finder, Found, RipgrepChoice
from ._paths import ESCAPED_NOTE, display_path, missing_path_error, read_approval, shown_name
from ._text import fence, one_line, plural
from ._walk import FileMatch, search_one_file
from .approval import Approval
from .base import Presentation, ToolOutcome, TypedTool
from .context import ToolContext
from .policy import is_sensitive

__all__ = ["SEARCH_DEFAULT_LIMIT", "SEARCH_MAX_LIMIT", "SearchFilesTool", "compile_search"]

SEARCH_DEFAULT_LIMIT = 100
SEARCH_MAX_LIMIT = 500
_COLLECT_CAP = 2000
_MAX_LINE_CHARS = 300
_MAX_OUTPUT_CHARS = 40_000


class _SearchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str = Field(min_length=1, description="Regular expression (Python syntax), or plain text with literal.")
    path: str = Field(default=".", min_length=1, description="Folder or file to search.")
    glob: str | None = Field(
        default=None, min_length=1, description="Only files matching this gitignore-style glob ('*.py', 'src/**')."
    )
    literal: bool = Field(default=False, description="Pattern is plain text.")
    ignore_case: bool = Field(default=False, description="Match regardless of case.")
    limit: int = Field(default=SEARCH_DEFAULT_LIMIT, ge=1, le=SEARCH_MAX_LIMIT, description="Most matches to return.")


def compile_search(pattern: str, *, literal: bool, ignore_case: bool) -> re.Pattern[str]:
    """The pattern as Python compiles it; ``ToolInputError`` with the reason when it does not."""
    try:
        return re.compile(re.escape(pattern) if literal else pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolInputError(
            f"pattern is not a valid regular expression ({exc}); set literal=true to search for the text as it is"
        ) from exc


def _line_text(text: str) -> str:
    text = text.rstrip("\r")
    if len(text) > _MAX_LINE_CHARS:
        return text[:_MAX_LINE_CHARS] + " …"
    return text


class SearchFilesTool(TypedTool[_SearchInput, dict[str, Any]]):
    name = "search_files"
    description = (
        "Search file contents for a regular expression (or literal text) under a folder or in one file; returns"
        " path:line: text for each matching line. Honours .gitignore; skips binary files."
    )
    Input = _SearchInput
    read_only = True

    def reads_only(self, parsed: _SearchInput) -> bool:
        return True

    def __init__(self, *, ripgrep: RipgrepChoice = AUTO, timeout_s: float = SEARCH_TIMEOUT_S):
        self._finder = Finder(ripgrep, timeout_s=timeout_s)

    def _title(self, parsed: _SearchInput, ctx: ToolContext) -> str:
        shown = display_path(ctx.env.workspace.resolve(parsed.path), ctx.env.workspace)
        where = f" in {shown}" + (f" ({parsed.glob})" if parsed.glob else "")
        return f"Search `{one_line(parsed.pattern, 60)}`{where}"

    def present(self, parsed: _SearchInput, ctx: ToolContext) -> Presentation:
        path = ctx.env.workspace.resolve(parsed.path)
        return Presentation(title=self._title(parsed, ctx), kind="search", locations=[Location(path=str(path))])

    async def approval(self, parsed: _SearchInput, ctx: ToolContext) -> Approval[dict[str, Any]]:
        return read_approval(ctx, ctx.env.workspace.resolve(parsed.path), self._title(parsed, ctx), parsed)

    async def _find(self, parsed: _SearchInput, path: Path, regex: re.Pattern[str]) -> Found[FileMatch]:
        if await anyio.to_thread.run_sync(path.is_dir):
            return await self._finder.search(
                path,
                parsed.pattern,
                regex,
                literal=parsed.literal,
                ignore_case=parsed.ignore_case,
                glob=parsed.glob,
                cap=_COLLECT_CAP,
            )
        found = await anyio.to_thread.run_sync(partial(search_one_file, path, regex, room=_COLLECT_CAP + 1))
        return Found(found[:_COLLECT_CAP], len(found) > _COLLECT_CAP)

    async def run(
        self, parsed: _SearchInput, approval: Approval[dict[str, Any]], ctx: ToolContext
    ) -> ToolOutcome[dict[str, Any]]:
        regex = compile_search(parsed.pattern, literal=parsed.literal, ignore_case=parsed.ignore_case)
        path = ctx.env.workspace.resolve(parsed.path)
        shown = display_path(path, ctx.env.workspace)
        if not await anyio.to_thread.run_sync(path.exists):
            raise await missing_path_error(path, shown)
        found, more, stopped_early = await self._find(parsed, path, regex)
        visible = [m for m in found if not is_sensitive(m.path)]
        secret = len(found) - len(visible)
        visible.sort(key=lambda m: (str(m.path), m.line))
        files = len({m.path for m in visible})
        bound = "more than " if more else ("at least " if stopped_early else "")
        count = f"{bound}{plural(len(visible), 'match', 'matches')} in {plural(files, 'file')}"
        lines: list[str] = []
        used = 0
        for match in visible[: parsed.limit]:
            line = f"{display_path(match.path, ctx.env.workspace)}:{match.line}: {_line_text(match.text)}"
            if used + len(line) > _MAX_OUTPUT_CHARS:
                break
            lines.append(line)
            used += len(line) + 1
        notes: list[str] = []
        if len(lines) < len(visible) or more:
            notes.append(
                f"[Showing the first {len(lines)}; narrow the search with path, glob or a more specific pattern.]"
            )
        if stopped_early:
            notes.append(
                f"[The search stopped early, after {self._finder.timeout_s:g} s: files not reached yet were not"
                " searched. Narrow the search with path or glob.]"
            )
        if any(shown_name(str(m.path)) != str(m.path) for m in visible[: len(lines)]):
            notes.append(ESCAPED_NOTE)
        if secret:
            notes.append(
                f"[{plural(secret, 'match', 'matches')} in sensitive files (.env, keys, credentials) not shown.]"
            )
        if not visible:
            text = "\n".join([f"No matches for {parsed.pattern!r} in {shown}.", *notes])
        else:
            text = "\n".join([f"{count.capitalize()}:", *lines, *notes])
        return ToolOutcome(
            parts=[TextPart(text=text)],
            content=[TextBlock(text=fence(text))],
            raw_output={"matches": len(visible), "files": files, "more": more, "stopped_early": stopped_early},
        )
