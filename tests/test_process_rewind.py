"""Rewind, undo and fork at a message through the real ``python -m hermes_acp`` process (docs/architecture.md §6.10):
after three turns that wrote and edited files, a rewind to the first prompt puts every file back byte for byte from
the log, asks before overwriting one someone else changed since, keeps what it cut as a session of its own (listed,
loadable), and a reload in a fresh process replays only the kept part; ``/undo`` twice; ``/rewind`` with a form
and with a numbered list; a rewind while a turn runs is refused; ``session/fork`` at a message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from tests.fakes.acp_client import PermissionCall, RecordingClient
from tests.fakes.agent_process import AgentProcess, spawn_agent

pytestmark = pytest.mark.anyio

LATIN = "café au lait\n".encode("latin-1")


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
CHAT: dict[str, Any] = {"name": "chat", "responses": [{"repeat": True, "steps": [{"text": "Noted."}]}]}


async def _three_turns(agent: AgentProcess, session_id: str) -> list[str]:
    """The three turns, in dont_ask; the user message id each prompt response names."""
    await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
    ids = []
    for turn in ("one", "two", "three"):
        response = await agent.prompt(session_id, f"Please do turn {turn}")
        assert response.stop_reason == "end_turn"
        ids.append(response.field_meta["hermes"]["userMessageId"])
    return ids


def _asked_to_overwrite(answer: str) -> Any:
    async def answer_rewind(call: PermissionCall) -> str:
        return answer if call.tool_call.get("title", "").startswith("Rewind:") else "reject_once"

    return answer_rewind


@pytest.mark.parametrize("answer", ["reject_once", "allow_once"])
async def test_a_rewind_puts_the_files_back_asks_about_one_changed_outside_and_keeps_what_it_cut(
    tmp_path: Path, answer: str
) -> None:
    home = tmp_path / "home"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "app.py").write_text("a = 1\n")
    (workspace / "latin.txt").write_bytes(LATIN)
    client = RecordingClient(on_permission=_asked_to_overwrite(answer))
    async with spawn_agent(tmp_path, THREE_TURNS, home=home, client=client) as agent:
        session_id = await agent.new_session()
        first, _, _ = await _three_turns(agent, session_id)
        (workspace / "app.py").write_text("a = 2\n# mine\n")  # someone else, after the agent's edit
        result = await agent.request("_session/rewind", {"sessionId": session_id, "messageId": first})
        listed = await agent.request("session/list", {})
        moved = result["movedToSessionId"]
        permissions = list(client.permissions)
        agent.client.clear()
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(workspace), session_id=moved, mcp_servers=[])
        moved_cards = agent.client.cards(moved)
    (asked,) = [p for p in permissions if p.tool_call["title"].startswith("Rewind:")]
    assert "app.py" in str(asked.tool_call["content"]) and "notes.md" not in str(asked.tool_call["content"])
    notes, app, latin = (str(workspace / name) for name in ("notes.md", "app.py", "latin.txt"))
    assert not (workspace / "notes.md").exists(), "the agent created it after that point"
    assert (workspace / "latin.txt").read_bytes() == LATIN, "byte for byte, not UTF-8"
    if answer == "allow_once":
        assert result["restored"] == [notes, app, latin] and result["notRestored"] == []
        assert (workspace / "app.py").read_bytes() == b"a = 1\n"
    else:
        assert result["restored"] == [notes, latin]
        assert result["notRestored"] == [
            {"path": app, "reason": "changed since by someone else, so it was left as it is"}
        ]
        assert (workspace / "app.py").read_text() == "a = 2\n# mine\n", "another's change is not overwritten"
    assert result["commands"] == []
    titles = {s["sessionId"]: s["title"] for s in listed["sessions"]}
    assert titles[moved] == f"{titles[session_id]} (before rewind)"
    (entry,) = [s for s in listed["sessions"] if s["sessionId"] == moved]
    assert entry["_meta"]["hermes"]["provenance"]["kind"] == "rewind"
    assert set(moved_cards) == {"w_notes", "e_app", "e_notes", "w_latin", "w_again"}, "the cut part, loadable"

    async with spawn_agent(tmp_path / "second", THREE_TURNS, home=home) as agent:
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        replayed = agent.client.transcript(session_id)
        after = await agent.prompt(session_id, "What now?")
        sent = agent.model_requests()[-1].body["messages"]
    assert replayed["cards"] == {}, "only the kept part is replayed"
    (shown,) = replayed["messages"].values()
    assert shown.startswith("Rewound to before «Please do turn one».")
    assert after.stop_reason == "end_turn"
    assert [m["role"] for m in sent] == ["system", "user"], "the model starts again from before the first prompt"


async def test_undo_twice_takes_back_two_turns_and_rewind_lists_the_prompts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with spawn_agent(tmp_path, CHAT, home=home) as agent:
        session_id = await agent.new_session()
        for text in ("first question", "second question", "third question"):
            await agent.prompt(session_id, text)
        listing = await agent.prompt(session_id, "/rewind")
        listed_text = agent.client.text(session_id)
        await agent.prompt(session_id, "/undo")
        await agent.prompt(session_id, "/undo")
        await agent.prompt(session_id, "fourth question")
        sent = agent.model_requests()[-1].body["messages"]
        wrong = await agent.prompt(session_id, "/rewind 9")
        points = await agent.prompt(session_id, "/rewind")
    assert listing.stop_reason == wrong.stop_reason == points.stop_reason == "end_turn"
    assert "- 1. third question\n- 2. second question\n- 3. first question" in listed_text
    assert "Type `/rewind N`" in listed_text
    users = [m["content"] for m in sent if m["role"] == "user"]
    assert users == ["first question", "fourth question"], "two turns taken back, the rest goes on"
    async with spawn_agent(tmp_path / "second", CHAT, home=home) as agent:
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(agent.workspace), session_id=session_id, mcp_servers=[])
        shown = [u["content"]["text"] for u in agent.client.of_kind("user_message_chunk", session_id)]
    assert "second question" not in shown and "third question" not in shown
    assert shown[:2] == ["first question", "fourth question"]


async def test_rewind_with_a_form_goes_back_to_the_prompt_picked(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, CHAT, initialize=False) as agent:
        capabilities = acp.schema.ClientCapabilities.model_validate({"elicitation": {"form": {}}})
        await agent.conn.initialize(protocol_version=1, client_capabilities=capabilities)
        session_id = await agent.new_session()
        ids = []
        for text in ("alpha", "beta", "gamma"):
            ids.append((await agent.prompt(session_id, text)).field_meta["hermes"]["userMessageId"])
        agent.client.elicitation_answers.append({"action": "accept", "content": {"prompt": ids[1]}})
        await agent.prompt(session_id, "/rewind")
        await agent.prompt(session_id, "delta")
        sent = agent.model_requests()[-1].body["messages"]
    (form,) = agent.client.elicitations
    options = form["requestedSchema"]["properties"]["prompt"]["oneOf"]
    assert [o["title"] for o in options] == ["1. gamma", "2. beta", "3. alpha"]
    assert [o["const"] for o in options] == list(reversed(ids))
    assert [m["content"] for m in sent if m["role"] == "user"] == ["alpha", "delta"]


HELD: dict[str, Any] = {
    "name": "held",
    "responses": [
        {"match": {"last_message_contains": "long job"}, "steps": [{"text": "Working."}], "hold_after_chunks": 1},
        {"repeat": True, "steps": [{"text": "Fine."}]},
    ],
}


async def test_a_rewind_while_a_turn_runs_is_refused_with_why(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, HELD) as agent:
        session_id = await agent.new_session()
        first = (await agent.prompt(session_id, "hello")).field_meta["hermes"]["userMessageId"]
        async with anyio.create_task_group() as group:
            group.start_soon(agent.prompt, session_id, "Please do the long job")
            await agent.client.wait_for(lambda: "Working" in agent.client.text(session_id), timeout=30)
            with pytest.raises(AssertionError) as refused:
                await agent.request("_session/rewind", {"sessionId": session_id, "messageId": first})
            command = await agent.prompt(session_id, "/undo")
            await agent.conn.cancel(session_id=session_id)
        with pytest.raises(AssertionError) as unknown:
            await agent.request("_session/rewind", {"sessionId": session_id, "messageId": "not-a-message"})
    assert "Cannot rewind while a turn runs" in str(refused.value)
    assert command.stop_reason == "end_turn", "answered at once"
    assert "Cannot rewind while a turn runs" in agent.client.text(session_id)
    assert "-32602" in str(unknown.value) and "messageId" in str(unknown.value)


async def test_a_fork_at_a_message_keeps_the_history_up_to_it(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, CHAT) as agent:
        session_id = await agent.new_session()
        ids = [(await agent.prompt(session_id, t)).field_meta["hermes"]["userMessageId"] for t in ("one", "two")]
        forked = await agent.request(
            "session/fork",
            {"sessionId": session_id, "cwd": str(agent.workspace), "mcpServers": [], "_meta": {"messageId": ids[0]}},
        )
        await agent.prompt(forked["sessionId"], "three")
        sent = agent.model_requests()[-1].body["messages"]
        with pytest.raises(AssertionError) as unknown:
            await agent.request(
                "session/fork",
                {"sessionId": session_id, "cwd": str(agent.workspace), "_meta": {"messageId": "nope"}},
            )
    assert forked["_meta"]["hermes"]["messageId"] == ids[0]
    (user,) = [m["content"] for m in sent if m["role"] == "user"]
    assert user.startswith("one") and user.endswith("three"), "inclusive: the prompt, without its answer"
    assert [m["role"] for m in sent] == ["system", "user"]
    assert "-32602" in str(unknown.value)


GITCONFIG = b"[user]\n\tname = Someone\n"
PAYLOAD = b"[core]\n\tfsmonitor = touch /tmp/pwned\n"


def _swap_chain(file_name: str, content: str, outside: Path) -> dict[str, Any]:
    """One turn: ``write_file d/<file_name>``, then a command that swaps the folder ``d`` for a link to ``outside``."""
    return {
        "name": "swap-after-write",
        "responses": [
            {
                "match": {"last_message_contains": "plant it"},
                "steps": [_call("w_plant", "write_file", path=f"d/{file_name}", content=content)],
            },
            {
                "match": {"last_message_contains": file_name},
                "steps": [_call("t_swap", "terminal", command=f"rm -rf d && ln -s '{outside}' d")],
            },
            {"repeat": True, "steps": [{"text": "Done."}]},
        ],
    }


async def _allow_everything(call: PermissionCall) -> str:
    return "allow_once"


def _fake_home(tmp_path: Path) -> Path:
    home = tmp_path / "fake-home"
    home.mkdir()
    (home / ".gitconfig").write_bytes(GITCONFIG)
    (home / "notes.txt").write_bytes(b"created by the agent, then swapped in\n")
    return home


@pytest.mark.parametrize("how", ["_session/rewind", "/undo"])
async def test_a_folder_swapped_for_a_link_after_the_write_is_never_followed_by_the_restore(
    tmp_path: Path, how: str
) -> None:
    """The chain of the issue: the model writes ``d/.gitconfig`` with the exact bytes of the user's ``~/.gitconfig``
    over a planted payload, a command swaps ``d`` for a link to the home, the user rewinds: the payload must not
    land in the home (the restore used to follow the link, asking nothing, since the hashes matched)."""
    outside = _fake_home(tmp_path)
    workspace = tmp_path / "workspace"
    (workspace / "d").mkdir(parents=True)
    (workspace / "d" / ".gitconfig").write_bytes(PAYLOAD)
    client = RecordingClient(on_permission=_allow_everything)
    scenario = _swap_chain(".gitconfig", GITCONFIG.decode(), outside)
    async with spawn_agent(tmp_path, scenario, client=client) as agent:
        session_id = await agent.new_session()
        await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
        first = (await agent.prompt(session_id, "plant it")).field_meta["hermes"]["userMessageId"]
        assert (workspace / "d").is_symlink(), "the command swapped the folder for a link"
        if how == "/undo":
            await agent.prompt(session_id, "/undo")
        else:
            result = await agent.request("_session/rewind", {"sessionId": session_id, "messageId": first})
            assert result["restored"] == []
            (refused,) = result["notRestored"]
            assert refused["path"] == str(workspace / "d" / ".gitconfig") and "link" in refused["reason"]
        message = agent.client.text(session_id).split("Rewound to before")[-1]
        asked = [p for p in client.permissions if p.tool_call.get("title", "").startswith("Rewind:")]
    assert (outside / ".gitconfig").read_bytes() == GITCONFIG, "nothing outside was written"
    assert sorted(p.name for p in outside.iterdir()) == [".gitconfig", "notes.txt"]
    assert len(asked) == 1, "a file whose folder was replaced is asked about"
    assert "d/.gitconfig" in message and "link" in message, message


async def test_a_created_file_whose_folder_became_a_link_is_not_deleted_outside(tmp_path: Path) -> None:
    outside = _fake_home(tmp_path)
    (tmp_path / "workspace" / "d").mkdir(parents=True)
    client = RecordingClient(on_permission=_allow_everything)
    kept = (outside / "notes.txt").read_text()
    async with spawn_agent(tmp_path, _swap_chain("notes.txt", kept, outside), client=client) as agent:
        session_id = await agent.new_session()
        await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
        first = (await agent.prompt(session_id, "plant it")).field_meta["hermes"]["userMessageId"]
        result = await agent.request("_session/rewind", {"sessionId": session_id, "messageId": first})
        text = agent.client.text(session_id)
    assert (outside / "notes.txt").read_text() == kept, "nothing outside was deleted"
    (refused,) = result["notRestored"]
    assert refused["path"].endswith("/d/notes.txt") and "link" in refused["reason"]
    assert result["restored"] == [] and "d/notes.txt" in text


async def test_each_rewind_keeps_what_it_cut_under_a_title_of_its_own(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, CHAT) as agent:
        session_id = await agent.new_session()
        ids = []
        for text in ("first question", "second question", "third question"):
            ids.append((await agent.prompt(session_id, text)).field_meta["hermes"]["userMessageId"])
        await agent.prompt(session_id, "/title Plans")
        await agent.request("_session/rewind", {"sessionId": session_id, "messageId": ids[2]})
        await agent.prompt(session_id, "/undo")
        await agent.prompt(session_id, "/undo")
        listed = await agent.request("session/list", {})
    kept = sorted(s["title"] for s in listed["sessions"] if s["sessionId"] != session_id)
    assert kept == ["Plans (before rewind 2)", "Plans (before rewind 3)", "Plans (before rewind)"]
