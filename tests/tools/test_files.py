"""read_file and write_file on the local disk: windows, caps, binary and bad encodings, missing paths, diffs,
atomic writes, the approval requests that name the right paths, and the snapshot a write's approval carries."""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from hermes_acp.core import DiffBlock, FileChange
from hermes_acp.errors import ToolError, ToolInputError
from hermes_acp.tools._snapshot import EDIT_MAX_BYTES
from hermes_acp.tools.approval import FileSnapshot
from hermes_acp.tools.files import READ_DEFAULT_LINES, READ_MAX_CHARS, ReadFileTool, WriteFileTool
from hermes_acp.tools.policy import decide
from tests.fakes.tools import approved

from .helpers import call, context, request_of

pytestmark = pytest.mark.anyio


def numbered(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


async def test_read_returns_numbered_lines_and_a_summary(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import os\n\nprint(os)\n")
    called = await call(ReadFileTool(), context(tmp_path), path="a.py")
    assert called.text == "     1\timport os\n     2\t\n     3\tprint(os)"
    assert called.outcome.content[0].text == "Read lines 1-3 of 3"  # type: ignore[union-attr]
    assert called.request is not None
    assert called.request.scope == "read" and not called.request.mutating
    assert called.request.paths == (tmp_path / "a.py",)


async def test_read_window_with_line_and_limit_says_how_to_read_on(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text(numbered(100))
    tool = ReadFileTool()
    ctx = context(tmp_path)
    called = await call(tool, ctx, path="big.txt", line=10, limit=5)
    lines = called.text.split("\n")
    assert lines[:5] == [f"{i:>6}\tline {i}" for i in range(10, 15)]
    assert "Showing lines 10-14 of 100" in called.text
    assert "line=15" in called.text
    assert tool.present(tool.validate({"path": "big.txt", "line": 10, "limit": 5}), ctx).title == (
        "Read big.txt (lines 10-14)"
    )
    presentation = tool.present(tool.validate({"path": "big.txt", "line": 10}), ctx)
    assert presentation.title == "Read big.txt (from line 10)"
    assert presentation.locations[0].path == str(tmp_path / "big.txt")
    assert presentation.locations[0].line == 10


async def test_read_defaults_to_a_bounded_number_of_lines(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text(numbered(READ_DEFAULT_LINES + 50))
    called = await call(ReadFileTool(), context(tmp_path), path="long.txt")
    assert f"Showing lines 1-{READ_DEFAULT_LINES} of {READ_DEFAULT_LINES + 50}" in called.text
    assert f"line={READ_DEFAULT_LINES + 1}" in called.text
    assert called.output["more"] is True


async def test_read_caps_characters_and_cuts_very_long_lines(tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text(("x" * 5000 + "\n") * 200)
    called = await call(ReadFileTool(), context(tmp_path), path="wide.txt")
    assert len(called.text) < READ_MAX_CHARS + 500
    assert "line cut: 3000 more characters" in called.text
    assert f"Output capped at {READ_MAX_CHARS} characters" in called.text
    last = int(called.text.split("Call read_file with line=")[1].split(" ")[0])
    assert 2 < last < 200


async def test_read_of_a_huge_single_line_file_stays_bounded(tmp_path: Path) -> None:
    (tmp_path / "minified.js").write_bytes(b"a" * (20 * 1024 * 1024))
    called = await call(ReadFileTool(), context(tmp_path), path="minified.js")
    assert len(called.text) < READ_MAX_CHARS + 500
    assert "line cut" in called.text


async def test_binary_files_are_refused_clearly(tmp_path: Path) -> None:
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    with pytest.raises(ToolInputError, match=r"image\.png is a binary file \(16 bytes\)"):
        await call(ReadFileTool(), context(tmp_path), path="image.png")


async def test_invalid_utf8_is_shown_with_replacement_characters_and_said_so(tmp_path: Path) -> None:
    (tmp_path / "latin1.txt").write_bytes("café\nnaïve\n".encode("latin-1"))
    called = await call(ReadFileTool(), context(tmp_path), path="latin1.txt")
    assert "caf\ufffd" in called.text
    assert "not valid UTF-8" in called.text


async def test_missing_paths_and_folders_get_helpful_errors(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("a: 1\n")
    with pytest.raises(ToolInputError, match=r"config\.yml does not exist; similar names there: config\.yaml"):
        await call(ReadFileTool(), context(tmp_path), path="config.yml")
    with pytest.raises(ToolInputError, match="there is no folder"):
        await call(ReadFileTool(), context(tmp_path), path="nope/deeper/x.txt")
    (tmp_path / "src").mkdir()
    with pytest.raises(ToolInputError, match="is a folder; use list_files"):
        await call(ReadFileTool(), context(tmp_path), path="src")


async def test_close_names_are_looked_up_off_the_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "config.yaml").write_text("a: 1\n")
    listed_on_loop: list[bool] = []
    listdir = os.listdir

    def recorded(path: str | os.PathLike[str]) -> list[str]:
        if Path(path) == tmp_path:
            listed_on_loop.append(threading.current_thread() is threading.main_thread())
        return listdir(path)

    monkeypatch.setattr(os, "listdir", recorded)
    with pytest.raises(ToolInputError, match=r"similar names there: config\.yaml"):
        await call(ReadFileTool(), context(tmp_path), path="config.yml")
    assert listed_on_loop == [False]


async def test_reading_past_the_end_says_how_long_the_file_is(tmp_path: Path) -> None:
    (tmp_path / "short.txt").write_text(numbered(3))
    with pytest.raises(ToolInputError, match=r"line 10 is past the end of short\.txt \(it has 3 lines\)"):
        await call(ReadFileTool(), context(tmp_path), path="short.txt", line=10)


async def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("")
    called = await call(ReadFileTool(), context(tmp_path), path="empty.txt")
    assert called.text == "empty.txt is empty."


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
async def test_unreadable_file_is_a_clear_error(tmp_path: Path) -> None:
    secret = tmp_path / "locked.txt"
    secret.write_text("x")
    secret.chmod(0)
    with pytest.raises(ToolError, match="permission denied"):
        await call(ReadFileTool(), context(tmp_path), path="locked.txt")


async def test_symlink_escaping_the_workspace_is_judged_as_outside(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    (workspace / "link.txt").symlink_to(outside)
    ctx = context(workspace)
    tool = ReadFileTool()
    request = await request_of(tool, ctx, path="link.txt")
    assert request.paths == (workspace / "link.txt", outside)
    assert decide("default", request, ctx.env.workspace, {}).decision == "ask"
    assert decide("read_only", request, ctx.env.workspace, {}).decision == "deny"
    dotdot = await request_of(tool, ctx, path="../outside.txt")
    assert dotdot.paths == (outside,)
    assert decide("dont_ask", dotdot, ctx.env.workspace, {}).decision == "ask"


async def test_write_creates_parents_and_shows_a_new_file_diff(tmp_path: Path) -> None:
    called = await call(WriteFileTool(), context(tmp_path), path="pkg/sub/new.py", content="x = 1\n")
    target = tmp_path / "pkg/sub/new.py"
    assert target.read_text() == "x = 1\n"
    assert called.text == "Created pkg/sub/new.py (1 line)."
    assert called.request is not None
    assert called.request.scope == "edit" and called.request.mutating
    expected = DiffBlock(path=str(target), old_text=None, new_text="x = 1\n")
    assert called.request.content == [expected]
    assert called.outcome.content == [expected]
    assert oct(target.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


async def test_write_replaces_content_with_an_old_text_diff_and_keeps_the_mode(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o755)
    called = await call(WriteFileTool(), context(tmp_path), path="run.sh", content="echo new\n")
    assert script.read_text() == "echo new\n"
    assert script.stat().st_mode & 0o777 == 0o755
    assert called.outcome.content == [DiffBlock(path=str(script), old_text="echo old\n", new_text="echo new\n")]
    assert list(tmp_path.iterdir()) == [script], "no temporary file is left behind"


async def test_write_through_a_symlink_writes_the_target(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("a\n")
    (tmp_path / "alias.txt").symlink_to(real)
    await call(WriteFileTool(), context(tmp_path), path="alias.txt", content="b\n")
    assert (tmp_path / "alias.txt").is_symlink()
    assert real.read_text() == "b\n"


async def test_write_refuses_when_the_file_changed_after_the_diff_was_shown(tmp_path: Path) -> None:
    target = tmp_path / "notes.md"
    target.write_text("v1\n")
    tool = WriteFileTool()
    ctx = context(tmp_path)
    parsed = tool.validate({"path": "notes.md", "content": "mine\n"})
    approval = await approved(tool, parsed, ctx)
    target.write_text("someone else's v2\n")
    with pytest.raises(ToolError, match="changed after this change was computed"):
        await tool.run(parsed, approval, ctx)
    assert target.read_text() == "someone else's v2\n"


async def test_write_refuses_when_the_file_appeared_or_vanished_after_the_diff_was_shown(tmp_path: Path) -> None:
    tool = WriteFileTool()
    ctx = context(tmp_path)
    fresh = tool.validate({"path": "new.md", "content": "mine\n"})
    approval = await approved(tool, fresh, ctx)
    (tmp_path / "new.md").write_text("theirs\n")
    with pytest.raises(ToolError, match=r"new\.md was created after this change was computed"):
        await tool.run(fresh, approval, ctx)
    old = tool.validate({"path": "old.md", "content": "mine\n"})
    (tmp_path / "old.md").write_text("v1\n")
    approval = await approved(tool, old, ctx)
    (tmp_path / "old.md").unlink()
    with pytest.raises(ToolError, match=r"old\.md was deleted after this change was computed"):
        await tool.run(old, approval, ctx)
    assert (tmp_path / "new.md").read_text() == "theirs\n" and not (tmp_path / "old.md").exists()


async def test_a_folder_swapped_for_a_link_after_the_approval_is_refused_not_followed(tmp_path: Path) -> None:
    """The approval judged ``<workspace>/d/.gitconfig``; a command swaps ``d`` for a link to the home before the write
    (the new file is absent in both places, so the snapshot cannot tell): the write must not land in the home."""
    workspace, home = tmp_path / "workspace", tmp_path / "home"
    (workspace / "d").mkdir(parents=True)
    home.mkdir()
    tool = WriteFileTool()
    ctx = context(workspace)
    parsed = tool.validate({"path": "d/.gitconfig", "content": "[core]\n\tfsmonitor = evil\n"})
    approval = await approved(tool, parsed, ctx)
    (workspace / "d").rmdir()
    (workspace / "d").symlink_to(home)
    with pytest.raises(ToolError, match=r"d/\.gitconfig: .*/d is a link.*nothing was written"):
        await tool.run(parsed, approval, ctx)
    assert os.listdir(home) == [], "nothing outside was written"


async def test_the_approval_carries_the_snapshot_the_diff_was_computed_from(tmp_path: Path) -> None:
    """Path, hash and the old content itself, as a value: the file-change record is made from it."""
    target = tmp_path / "notes.md"
    target.write_bytes(b"v1\r\n")
    tool = WriteFileTool()
    ctx = context(tmp_path)
    approval = await tool.approval(tool.validate({"path": "notes.md", "content": "v2\n"}), ctx)
    assert approval.tool_call_id == ctx.tool_call_id and approval.granted is None
    (change,) = approval.changes
    assert change.before == FileSnapshot(target, b"v1\r\n", "v1\r\n", hashlib.sha256(b"v1\r\n").hexdigest())
    assert (change.after, change.after_data) == ("v2\n", b"v2\n")
    assert approval.records() == [
        FileChange(
            path=str(target),
            before="v1\r\n",
            before_sha256=hashlib.sha256(b"v1\r\n").hexdigest(),
            after_sha256=hashlib.sha256(b"v2\n").hexdigest(),
        )
    ]
    assert approval.request is not None
    assert approval.request.content == [DiffBlock(path=str(target), old_text="v1\r\n", new_text="v2\n")]


async def test_a_new_file_and_an_unchanged_one_are_recorded_as_such(tmp_path: Path) -> None:
    tool = WriteFileTool()
    ctx = context(tmp_path)
    created = await tool.approval(tool.validate({"path": "new.md", "content": "x"}), ctx)
    (record,) = created.records()
    assert (record.before, record.before_sha256, record.before_bytes()) == (None, None, None)
    (tmp_path / "same.md").write_text("x")
    same = await tool.approval(tool.validate({"path": "same.md", "content": "x"}), ctx)
    assert same.records() == [], "writing what the file holds changes nothing"


async def test_a_file_that_is_not_utf8_is_recorded_byte_for_byte(tmp_path: Path) -> None:
    """The diff shows U+FFFD for the undecodable bytes; the record keeps the bytes themselves (base64)."""
    target = tmp_path / "latin.txt"
    target.write_bytes("café\n".encode("latin-1"))
    called = await call(WriteFileTool(), context(tmp_path), path="latin.txt", content="cafe\n")
    (record,) = called.approval.records()
    assert record.before_encoding == "base64"
    assert record.before_bytes() == "café\n".encode("latin-1")
    assert called.approval.changes[0].before.text == "caf\ufffd\n"
    assert target.read_bytes() == b"cafe\n"


async def test_a_write_without_its_own_granted_approval_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "notes.md"
    target.write_text("v1\n")
    tool = WriteFileTool()
    ctx = context(tmp_path)
    parsed = tool.validate({"path": "notes.md", "content": "mine\n"})
    asked = await tool.approval(parsed, ctx)
    with pytest.raises(ToolError, match="ran without its own approval"):
        await tool.run(parsed, asked, ctx)
    other = replace(ctx, tool_call_id="call_other")
    with pytest.raises(ToolError, match="ran without its own approval"):
        await tool.run(parsed, asked.grant("allow_once"), other)
    assert target.read_text() == "v1\n"


async def test_new_content_over_the_limit_is_refused_before_asking(tmp_path: Path) -> None:
    with pytest.raises(ToolInputError, match=r"new content of big\.txt is too large for write_file"):
        await call(WriteFileTool(), context(tmp_path), path="big.txt", content="a" * (EDIT_MAX_BYTES + 1))
    assert not (tmp_path / "big.txt").exists()


async def test_write_refuses_binary_files_and_folders(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2")
    (tmp_path / "dir").mkdir()
    with pytest.raises(ToolInputError, match="binary file"):
        await call(WriteFileTool(), context(tmp_path), path="blob.bin", content="text")
    with pytest.raises(ToolInputError, match="is a folder"):
        await call(WriteFileTool(), context(tmp_path), path="dir", content="text")
    assert (tmp_path / "blob.bin").read_bytes() == b"\0\1\2"


async def test_write_under_a_file_fails_clearly(tmp_path: Path) -> None:
    (tmp_path / "plain.txt").write_text("x")
    with pytest.raises(ToolError):
        await call(WriteFileTool(), context(tmp_path), path="plain.txt/child.txt", content="y")
    assert (tmp_path / "plain.txt").read_text() == "x"


async def test_sensitive_and_outside_writes_are_named_for_the_policy(tmp_path: Path) -> None:
    ctx = context(tmp_path / "ws")
    (tmp_path / "ws").mkdir()
    tool = WriteFileTool()
    env = await request_of(tool, ctx, path=".env", content="K=1")
    assert decide("dont_ask", env, ctx.env.workspace, {}).decision == "ask"
    assert decide("accept_edits", env, ctx.env.workspace, {}).decision == "ask"
    inside = await request_of(tool, ctx, path="a.txt", content="1")
    assert decide("accept_edits", inside, ctx.env.workspace, {}).decision == "allow"
    assert decide("read_only", inside, ctx.env.workspace, {}).decision == "deny"
    outside = await request_of(tool, ctx, path="../escape.txt", content="1")
    assert decide("accept_edits", outside, ctx.env.workspace, {}).decision == "ask"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
