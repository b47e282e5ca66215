"""edit_file: exact edits in order, all or nothing, errors that name the edit, CRLF files, stale approvals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes_acp.core import DiffBlock
from hermes_acp.errors import ToolError, ToolInputError
from hermes_acp.tools import edit as edit_module
from hermes_acp.tools.approval import Approval
from hermes_acp.tools.edit import EditFileTool, EditOutput
from tests.fakes.tools import approved

from .helpers import call, context

pytestmark = pytest.mark.anyio

SOURCE = "def greet(name):\n    return 'hi ' + name\n\n\ndef part():\n    return 'bye'\n"


def edit(old: str, new: str, **extra: Any) -> dict[str, Any]:
    return {"old_text": old, "new_text": new, **extra}


async def test_edits_apply_in_order_and_the_diff_shows_the_whole_change(tmp_path: Path) -> None:
    target = tmp_path / "app.py"
    target.write_text(SOURCE)
    edits = [edit("'hi '", "'hello '"), edit("def part", "def farewell"), edit("'hello '", "'hello, '")]
    called = await call(EditFileTool(), context(tmp_path), path="app.py", edits=edits)
    expected = SOURCE.replace("'hi '", "'hello, '").replace("def part", "def farewell")
    assert target.read_text() == expected
    assert called.outcome.content == [DiffBlock(path=str(target), old_text=SOURCE, new_text=expected)]
    assert called.request is not None
    assert called.request.content == called.outcome.content
    assert called.request.scope == "edit"
    assert "3 edits, 3 replacements; the first change is at line 2" in called.text


async def test_a_missing_match_names_the_edit_and_changes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "app.py"
    target.write_text(SOURCE)
    edits = [edit("'hi '", "'hello '"), edit("return 'ciao'", "return 'x'")]
    with pytest.raises(ToolInputError, match=r"edits\[1\]: old_text was not found in app\.py \(after the edits"):
        await call(EditFileTool(), context(tmp_path), path="app.py", edits=edits)
    assert target.read_text() == SOURCE


async def test_an_ambiguous_match_names_the_edit_and_the_lines(tmp_path: Path) -> None:
    target = tmp_path / "app.py"
    target.write_text(SOURCE)
    with pytest.raises(ToolInputError, match=r"edits\[0\]: old_text occurs 2 times in app\.py \(at lines 2, 6\)"):
        await call(EditFileTool(), context(tmp_path), path="app.py", edits=[edit("return", "yield")])
    assert target.read_text() == SOURCE


async def test_replace_all_changes_every_occurrence(tmp_path: Path) -> None:
    target = tmp_path / "app.py"
    target.write_text(SOURCE)
    called = await call(
        EditFileTool(), context(tmp_path), path="app.py", edits=[edit("return", "yield", replace_all=True)]
    )
    assert target.read_text() == SOURCE.replace("return", "yield")
    assert "2 replacements" in called.text


async def test_hints_for_indentation_and_line_number_prefixes(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(SOURCE)
    with pytest.raises(ToolInputError, match="matches at line 1 if spaces and indentation are ignored"):
        await call(
            EditFileTool(), context(tmp_path), path="app.py", edits=[edit("def greet(name):\n  return 'hi '", "x")]
        )
    with pytest.raises(ToolInputError, match="line-number prefixes"):
        await call(EditFileTool(), context(tmp_path), path="app.py", edits=[edit("     2\t    return", "x")])


async def test_identical_old_and_new_text_is_refused(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(SOURCE)
    with pytest.raises(ToolInputError, match=r"edits\[0\]: old_text and new_text are identical"):
        await call(EditFileTool(), context(tmp_path), path="app.py", edits=[edit("def", "def")])


async def test_crlf_files_accept_edits_written_with_plain_newlines(tmp_path: Path) -> None:
    target = tmp_path / "win.txt"
    target.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await call(EditFileTool(), context(tmp_path), path="win.txt", edits=[edit("one\ntwo", "uno\ndos")])
    assert target.read_bytes() == b"uno\r\ndos\r\nthree\r\n"


async def test_a_file_changed_after_approval_is_not_written(tmp_path: Path) -> None:
    target = tmp_path / "app.py"
    target.write_text(SOURCE)
    tool = EditFileTool()
    ctx = context(tmp_path)
    parsed = tool.validate({"path": "app.py", "edits": [edit("'bye'", "'ciao'")]})
    approval = await approved(tool, parsed, ctx)
    target.write_text(SOURCE + "# edited by the user\n")
    with pytest.raises(ToolError, match="changed after this change was computed and shown for approval"):
        await tool.run(parsed, approval, ctx)
    assert target.read_text() == SOURCE + "# edited by the user\n"


async def test_the_edits_computed_for_approval_are_the_ones_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The diff shown for approval is computed once and written as shown: run works from the approval's values
    (the snapshot, the new text, the counts), not from the parsed input."""
    target = tmp_path / "app.py"
    target.write_text(SOURCE)
    applied: list[str] = []
    apply = edit_module.apply_edits

    def counted(original: str, edits: Any, shown: str) -> edit_module.EditResult:
        applied.append(shown)
        return apply(original, edits, shown)

    monkeypatch.setattr(edit_module, "apply_edits", counted)
    called = await call(EditFileTool(), context(tmp_path), path="app.py", edits=[edit("'bye'", "'ciao'")])
    assert applied == ["app.py"]
    assert called.request is not None and called.request.content == called.outcome.content
    assert called.output == EditOutput(path=str(target), edits=1, replacements=1, first_line=6)
    (change,) = called.approval.changes
    assert change.before.data == SOURCE.encode() and change.after == SOURCE.replace("'bye'", "'ciao'")
    assert target.read_text() == change.after


async def test_an_edit_without_its_own_granted_approval_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "app.py"
    target.write_text(SOURCE)
    tool = EditFileTool()
    ctx = context(tmp_path)
    parsed = tool.validate({"path": "app.py", "edits": [edit("'bye'", "'ciao'")]})
    with pytest.raises(ToolError, match="ran without the edits its approval computed"):
        await tool.run(parsed, Approval(ctx.tool_call_id, granted="policy"), ctx)
    with pytest.raises(ToolError, match="ran without its own approval"):
        await tool.run(parsed, await tool.approval(parsed, ctx), ctx)
    assert target.read_text() == SOURCE


async def test_missing_binary_and_non_utf8_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ToolInputError, match=r"does not exist.*use write_file"):
        await call(EditFileTool(), context(tmp_path), path="new.py", edits=[edit("a", "b")])
    (tmp_path / "blob").write_bytes(b"a\0b")
    with pytest.raises(ToolInputError, match="binary file"):
        await call(EditFileTool(), context(tmp_path), path="blob", edits=[edit("a", "b")])
    (tmp_path / "latin.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(ToolInputError, match="not valid UTF-8"):
        await call(EditFileTool(), context(tmp_path), path="latin.txt", edits=[edit("caf", "x")])
    assert (tmp_path / "latin.txt").read_bytes() == "café".encode("latin-1")


async def test_oversized_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("a" * (2 * 1024 * 1024))
    with pytest.raises(ToolInputError, match="too large for edit_file"):
        await call(EditFileTool(), context(tmp_path), path="big.txt", edits=[edit("a", "b")])


def test_schema_requires_at_least_one_edit() -> None:
    tool = EditFileTool()
    with pytest.raises(ToolInputError, match="edits"):
        tool.validate({"path": "a", "edits": []})
    with pytest.raises(ToolInputError, match="old_text"):
        tool.validate({"path": "a", "edits": [{"old_text": "", "new_text": "x"}]})
