"""File changes through the real ``python -m hermes_acp`` process: every write and edit the agent's file tools make
is stored as a value (path, the old content verbatim, before and after hashes) before the file is written, and a
reload in a fresh process finds them in order, enough to put every file back byte for byte; an edit whose file
changed while the user looked at its diff is refused, and the log says it planned a change that never happened."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import anyio
import pytest

from hermes_acp.core import FileChange, ToolCallRunning, ToolCallSettled
from hermes_acp.storage.sqlite import SqliteSessionStore
from tests.fakes.acp_client import PermissionCall, RecordingClient
from tests.fakes.agent_process import AgentProcess, spawn_agent

pytestmark = pytest.mark.anyio

LATIN = "café au lait\n".encode("latin-1")
"""A file that is not UTF-8: its old content must come back as these bytes, not as replacement characters."""


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": call_id, "name": name, "arguments": arguments}}


def _edit(old: str, new: str) -> list[dict[str, str]]:
    return [{"old_text": old, "new_text": new}]


THREE_TURNS: dict[str, Any] = {
    "name": "three-turns-of-changes",
    "responses": [
        {
            "match": {"last_message_contains": "turn one"},
            "steps": [
                _call("w_notes", "write_file", path="notes.md", content="# Notes\n"),
                _call("e_app", "edit_file", path="app.py", edits=_edit("a = 1", "a = 2")),
            ],
        },
        {
            "match": {"last_message_contains": "turn two"},
            "steps": [
                _call("e_notes", "edit_file", path="notes.md", edits=_edit("# Notes\n", "# Notes\n- one\n")),
                _call("w_latin", "write_file", path="latin.txt", content="café au lait, in UTF-8\n"),
            ],
        },
        {
            "match": {"last_message_contains": "turn three"},
            "steps": [_call("w_again", "write_file", path="notes.md", content="rewritten\r\n")],
        },
        {"repeat": True, "steps": [{"text": "Done."}]},
    ],
}


async def _events(agent: AgentProcess, session_id: str) -> list[Any]:
    store = await SqliteSessionStore.open(agent.home / "state.db")
    try:
        return [stored.event for stored in await store.load_events(session_id)]
    finally:
        await store.aclose()


def _changes(events: list[Any]) -> list[tuple[str, FileChange, str | None]]:
    """Each stored file change with its call and how the call settled, in log order (the fold a rewind makes)."""
    settled = {e.tool_call_id: e.status for e in events if isinstance(e, ToolCallSettled)}
    return [
        (event.tool_call_id, change, settled.get(event.tool_call_id))
        for event in events
        if isinstance(event, ToolCallRunning)
        for change in event.file_changes
    ]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def test_three_turns_of_writes_and_edits_are_stored_as_values_a_fresh_process_can_restore_from(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "app.py").write_text("a = 1\n")
    (workspace / "latin.txt").write_bytes(LATIN)
    before = {name: (workspace / name).read_bytes() for name in ("app.py", "latin.txt")}
    async with spawn_agent(tmp_path, THREE_TURNS, home=home) as agent:
        session_id = await agent.new_session()
        await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
        for turn in ("one", "two", "three"):
            with anyio.fail_after(30):
                response = await agent.prompt(session_id, f"Please do turn {turn}")
            assert response.stop_reason == "end_turn"
        live = agent.client.transcript(session_id)
    async with spawn_agent(tmp_path / "second", THREE_TURNS, home=home) as agent:
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        replayed = agent.client.transcript(session_id)
        changes = _changes(await _events(agent, session_id))
    assert replayed == live
    assert all(card["status"] == "completed" for card in live["cards"].values())
    notes, app, latin = (str(workspace / name) for name in ("notes.md", "app.py", "latin.txt"))
    assert [(call, change.path, status) for call, change, status in changes] == [
        ("w_notes", notes, "completed"),
        ("e_app", app, "completed"),
        ("e_notes", notes, "completed"),
        ("w_latin", latin, "completed"),
        ("w_again", notes, "completed"),
    ]
    by_call = {call: change for call, change, _ in changes}
    assert by_call["w_notes"].before is None and by_call["w_notes"].before_sha256 is None, "it did not exist"
    assert by_call["e_app"].before_bytes() == b"a = 1\n"
    assert by_call["e_notes"].before_bytes() == b"# Notes\n"
    assert by_call["w_latin"].before_encoding == "base64" and by_call["w_latin"].before_bytes() == LATIN
    assert by_call["w_again"].before_bytes() == b"# Notes\n- one\n"
    for _, change, _ in changes:
        data = change.before_bytes()
        assert change.before_sha256 == (None if data is None else _sha(data))
    last: dict[str, FileChange] = {}
    for _, change, _ in changes:
        if change.path in last:
            assert change.before_sha256 == last[change.path].after_sha256, "nobody else changed it in between"
        last[change.path] = change
    for path, change in last.items():
        assert _sha(Path(path).read_bytes()) == change.after_sha256, "the file holds what the agent last wrote"
    first: dict[str, FileChange] = {}
    for _, change, _ in changes:
        first.setdefault(change.path, change)
    restored = {Path(path).name: change.before_bytes() for path, change in first.items()}
    assert restored == {"notes.md": None, **before}, "the log alone puts every file back as it was"


EDIT_WHILE_ASKED: dict[str, Any] = {
    "name": "edit-while-asked",
    "responses": [
        {
            "match": {"last_message_contains": "fix the constant"},
            "steps": [_call("e_const", "edit_file", path="app.py", edits=_edit("a = 1", "a = 2"))],
        },
        {"repeat": True, "steps": [{"text": "Noted."}]},
    ],
}


async def test_an_edit_whose_file_changed_while_its_diff_was_shown_is_refused_and_writes_nothing(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    target = workspace / "app.py"
    target.write_text("a = 1\n")

    async def someone_else_edits_then_allow(call: PermissionCall) -> str:
        target.write_text("a = 1\nb = 3\n")
        return "allow_once"

    client = RecordingClient(on_permission=someone_else_edits_then_allow)
    async with spawn_agent(tmp_path, EDIT_WHILE_ASKED, client=client) as agent:
        session_id = await agent.new_session()
        with anyio.fail_after(30):
            response = await agent.prompt(session_id, "Please fix the constant")
        card = agent.client.cards(session_id)["e_const"]
        events = await _events(agent, session_id)
        sent_back = agent.model_requests()[-1].body["messages"][-1]["content"]
    assert response.stop_reason == "end_turn"
    (asked,) = client.permissions
    assert asked.tool_call["toolCallId"] == "e_const"
    assert card["status"] == "failed"
    assert "app.py changed after this change was computed and shown for approval; nothing was written" in str(
        card["content"]
    )
    assert "changed after this change was computed" in str(sent_back)
    assert target.read_text() == "a = 1\nb = 3\n", "the other edit is kept"
    ((call, change, status),) = _changes(events)
    assert (call, status) == ("e_const", "failed"), "the change was planned, stored, and did not happen"
    assert change.before_bytes() == b"a = 1\n" and change.after_sha256 == _sha(b"a = 2\n")
