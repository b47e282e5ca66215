"""``edit_file``: exact search/replace edits to one text file, all or nothing.

Edits apply in order, each to the result of the ones before it. An edit whose ``old_text`` is missing, or found more
than once without ``replace_all``, fails the whole call with an error naming the edit (``edits[i]``) and why, with
a hint when the text matches except for indentation or includes read_file's line numbers. CRLF files accept edits
written with plain newlines. The diff is computed once, for the approval (so the user sees the real change, and a
doomed edit fails without asking), and that approved text is what is written, through the file tools' one
read → approve → verify path (``_snapshot``): the write is refused if the file changed in between. Nothing is
written unless every edit applies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from hermes_acp.core import DiffBlock, Location, TextPart
from hermes_acp.errors import ToolError, ToolInputError

from ._paths import display_path, missing_path_error
from ._snapshot import commit_change, plan_change, take_snapshot
from ._text import plural
from .approval import Approval
from .base import Presentation, ToolOutcome, TypedTool
from .context import ToolContext

__all__ = ["EditFileTool", "EditOutput", "EditResult", "apply_edits"]

_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\t", re.MULTILINE)


class _Edit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    old_text: str = Field(
        min_length=1,
        description="The exact text to replace.",
    )
    new_text: str = Field(description="The replacement text.")
    replace_all: bool = Field(default=False, description="Replace every occurrence of old_text.")


@dataclass(frozen=True, slots=True)
class EditResult:
    text: str
    replacements: int
    first_line: int


class _EditInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1, description="The file's path.")
    edits: list[_Edit] = Field(
        min_length=1,
        max_length=50,
        description="Applied in order, each to the result of the previous ones.",
    )


class EditOutput(BaseModel):
    """What ``edit_file`` reports for the record."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    path: str
    edits: int
    replacements: int
    first_line: int


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _occurrence_lines(text: str, needle: str, limit: int = 5) -> list[int]:
    lines: list[int] = []
    start = text.find(needle)
    while start != -1 and len(lines) < limit:
        lines.append(_line_of(text, start))
        start = text.find(needle, start + len(needle))
    return lines


def _squash(text: str) -> str:
    """Each line with its runs of spaces and tabs reduced to one space and its ends trimmed (lines kept)."""
    return "\n".join(" ".join(line.split()) for line in text.split("\n"))


def _near_miss(text: str, needle: str) -> str:
    """Why an exact match may have failed, when we can tell."""
    if _LINE_NUMBER_PREFIX.search(needle):
        return " It seems to include read_file's line-number prefixes; leave those out."
    squashed = _squash(needle.strip("\n"))
    if squashed.strip():
        flat = _squash(text)
        index = flat.find(squashed)
        if index != -1:
            line = flat.count("\n", 0, index) + 1
            return (
                f" It matches at line {line} if spaces and indentation are ignored: copy the text exactly as the"
                " file has it."
            )
    return " Read the file again to see its current text."


def apply_edits(original: str, edits: list[_Edit], shown: str) -> EditResult:
    """Apply every edit in order or raise ``ToolInputError`` naming the first that cannot apply."""
    text = original
    crlf = "\r\n" in original
    replacements = 0
    first_line: int | None = None
    for index, edit in enumerate(edits):
        label = f"edits[{index}]"
        old, new = edit.old_text, edit.new_text
        if old == new:
            raise ToolInputError(f"{label}: old_text and new_text are identical, so it changes nothing")
        count = text.count(old)
        if count == 0 and crlf and "\n" in old and "\r\n" not in old:
            as_crlf = old.replace("\n", "\r\n")
            if text.count(as_crlf):
                old, new = as_crlf, new.replace("\r\n", "\n").replace("\n", "\r\n")
                count = text.count(old)
        if count == 0:
            earlier = " (after the edits before it were applied)" if index else ""
            raise ToolInputError(
                f"{label}: old_text was not found in {shown}{earlier}; nothing was changed.{_near_miss(text, old)}"
            )
        if count > 1 and not edit.replace_all:
            where = ", ".join(str(n) for n in _occurrence_lines(text, old))
            raise ToolInputError(
                f"{label}: old_text occurs {count} times in {shown} (at lines {where}); nothing was changed."
                " Include more surrounding text so it matches once, or set replace_all to change every occurrence"
            )
        line = _line_of(text, text.find(old))
        first_line = line if first_line is None else min(first_line, line)
        text = text.replace(old, new) if edit.replace_all else text.replace(old, new, 1)
        replacements += count if edit.replace_all else 1
    return EditResult(text=text, replacements=replacements, first_line=first_line or 1)


class EditFileTool(TypedTool[_EditInput, EditOutput]):
    name = "edit_file"
    description = (
        "Edit a text file by exact search and replace. Each old_text must match the file exactly (whitespace"
        " included, without read_file's line-number prefixes) and once, unless replace_all. All edits apply or"
        " none."
    )
    Input = _EditInput
    read_only = False

    def present(self, parsed: _EditInput, ctx: ToolContext) -> Presentation:
        path = ctx.env.workspace.resolve(parsed.path)
        return Presentation(
            title=f"Edit {display_path(path, ctx.env.workspace)}", kind="edit", locations=[Location(path=str(path))]
        )

    async def approval(self, parsed: _EditInput, ctx: ToolContext) -> Approval[EditOutput]:
        path = ctx.env.workspace.resolve(parsed.path)
        shown = display_path(path, ctx.env.workspace)
        before = await take_snapshot(ctx, path, shown, action="edit_file", need_utf8=True)
        if before.text is None:
            raise await missing_path_error(path, shown, hint="; use write_file to create a new file")
        result = apply_edits(before.text, parsed.edits, shown)
        planned = EditOutput(
            path=str(path), edits=len(parsed.edits), replacements=result.replacements, first_line=result.first_line
        )
        return plan_change(
            ctx, before, result.text, title=f"Edit {shown}", action="edit_file", raw_input=parsed.model_dump(),
            planned=planned,
        )  # fmt: skip

    async def run(
        self, parsed: _EditInput, approval: Approval[EditOutput], ctx: ToolContext
    ) -> ToolOutcome[EditOutput]:
        report = approval.planned
        if report is None:
            raise ToolError("edit_file ran without the edits its approval computed; nothing was written")
        change = await commit_change(ctx, approval, action="edit_file")
        shown = display_path(change.before.path, ctx.env.workspace)
        text = (
            f"Edited {shown}: {plural(report.edits, 'edit')}, {plural(report.replacements, 'replacement')};"
            f" the first change is at line {report.first_line}."
        )
        return ToolOutcome(
            parts=[TextPart(text=text)],
            content=[DiffBlock(path=report.path, old_text=change.before.text, new_text=change.after)],
            raw_output=report,
        )
