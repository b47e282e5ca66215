"""What a rewind does with files (docs/architecture.md §6.10): the fold of the cut part's file changes, a file
turned into a link is someone else's change and the link is never followed, ``read_only`` writes nothing, and a
rewind killed after the files were put back finishes the second time without asking."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from hermes_acp.core import FileChange, SessionEvent, ToolCallRunning, ToolCallSettled, ToolStatus
from hermes_acp.errors import ErrorCode
from hermes_acp.providers.scripted import ScriptedProvider, text_reply, tool_reply
from hermes_acp.sessions.rewind import FileRestore, check, plan_files, restore
from tests.fakes.server import open_pair
from tests.fakes.tools import call

pytestmark = pytest.mark.anyio


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _change(call_id: str, path: str, before: bytes | None, after: bytes) -> ToolCallRunning:
    change = FileChange(
        path=path,
        before=None if before is None else before.decode(),
        before_sha256=None if before is None else _sha(before),
        after_sha256=_sha(after),
    )
    return ToolCallRunning(turn_id="t", tool_call_id=call_id, file_changes=[change])


def _settled(call_id: str, status: ToolStatus, error_code: ErrorCode | None = None) -> ToolCallSettled:
    return ToolCallSettled(
        turn_id="t",
        tool_call_id=call_id,
        status=status,
        result=None,
        error_code=error_code,
    )


def test_the_fold_keeps_the_first_content_and_what_the_agent_may_have_left() -> None:
    cut: list[SessionEvent] = [
        _change("c1", "/w/a", b"one", b"two"),
        _settled("c1", "completed"),
        _change("c2", "/w/a", b"two", b"three"),
        _settled("c2", "failed", "permission_denied"),
        _change("c3", "/w/b", None, b"new"),
        _change("c4", "/w/a", b"two", b"four"),
        _settled("c4", "failed", "outcome_unknown"),
    ]
    plans = {p.path: p for p in plan_files(cut)}
    assert plans["/w/a"].content == b"one" and plans["/w/a"].target_sha256 == _sha(b"one")
    assert plans["/w/a"].left_by_agent == {_sha(b"two"), _sha(b"four")}, "a refused write left it; an unknown may"
    assert plans["/w/b"].content is None and plans["/w/b"].left_by_agent == {None, _sha(b"new")}


async def test_a_file_replaced_by_a_link_is_someone_elses_change_and_the_link_is_never_followed(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"precious")
    target = tmp_path / "file.txt"
    target.symlink_to(outside)
    plan = FileRestore(str(target), b"old", _sha(b"old"), {_sha(b"precious")})
    assert await check(plan, (tmp_path,)) == "changed", "even though the link leads to what the agent left"
    refused = await restore(plan, (tmp_path,), lambda path: Path(path).name)
    assert refused == "file.txt is a link, and a link is never followed, so nothing was written through it"
    assert target.is_symlink() and outside.read_bytes() == b"precious", "neither written through nor replaced"


async def test_a_folder_that_became_a_link_or_a_file_is_changed_and_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f").write_bytes(b"left by the agent")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "d").symlink_to(outside)
    (workspace / "e").write_bytes(b"a file where the folder was")
    roots = (workspace,)
    for folder in ("d", "e"):
        written = FileRestore(str(workspace / folder / "f"), b"old", _sha(b"old"), {_sha(b"left by the agent")})
        created = FileRestore(str(workspace / folder / "f"), None, None, {_sha(b"left by the agent")})
        for plan in (written, created):
            assert await check(plan, roots) == "changed"
            reason = await restore(plan, roots, lambda path: str(Path(path).relative_to(workspace)))
            assert reason is not None and reason.startswith(f"{folder} is ")
    assert (outside / "f").read_bytes() == b"left by the agent" and os.listdir(outside) == ["f"]


async def test_read_only_rewinds_the_conversation_and_writes_no_file(tmp_path: Path) -> None:
    provider = ScriptedProvider([tool_reply(call("w1", "write_file", path="a.txt", content="new\n")), text_reply("ok")])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        await pair.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
        prompt_id = (await pair.prompt(session_id, "write it")).field_meta["hermes"]["userMessageId"]
        await pair.conn.set_session_mode(session_id=session_id, mode_id="read_only")
        result = await pair.request("_session/rewind", {"sessionId": session_id, "messageId": prompt_id})
    assert (pair.workspace / "a.txt").read_text() == "new\n"
    assert result["restored"] == []
    assert result["notRestored"] == [
        {
            "path": str(pair.workspace / "a.txt"),
            "reason": "the session is in read_only mode, so no file is written (switch mode and rewind again)",
        }
    ]


async def test_files_already_put_back_need_nothing_more(tmp_path: Path) -> None:
    provider = ScriptedProvider([tool_reply(call("w1", "write_file", path="a.txt", content="new\n")), text_reply("ok")])
    async with open_pair(tmp_path, provider=provider) as pair:
        (pair.workspace / "a.txt").write_text("old\n")
        session_id = await pair.new_session()
        await pair.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
        prompt_id = (await pair.prompt(session_id, "write it")).field_meta["hermes"]["userMessageId"]
        (pair.workspace / "a.txt").write_text("old\n")  # as a rewind killed after its writes left it
        result = await pair.request("_session/rewind", {"sessionId": session_id, "messageId": prompt_id})
    assert pair.client.permissions == [], "nothing to ask: the file holds its old content"
    assert result["restored"] == result["notRestored"] == []
