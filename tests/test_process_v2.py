"""One session, both versions, through the real process: a session made on a v1 connection resumed on a v2 one
with the same history, and the reverse; what a v2 client is shown live and what a replay shows it fold to the same
messages and tool calls. Every frame is checked against its version's schema (v2's closed lists too)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.model_server import serve_model_server
from tests.fakes.acp_client import RecordingClient
from tests.fakes.agent_process import EXIT_TIMEOUT_S, FRAME_LIMIT, REPO, spawn_agent
from tests.fakes.sandbox_pin import pin_sandbox
from tests.fakes.server import RawPair
from tests.fakes.v2_peer import V2Peer, v2_peer

pytestmark = pytest.mark.anyio

START = {"type": "start"}
"""``replayFrom``: the whole history."""
SCENARIO = {
    "name": "both-versions",
    "responses": [
        {
            "match": {"last_message_contains": "run it"},
            "steps": [
                {"reasoning": "A command first."},
                {"text": "Running it."},
                {"tool_call": {"id": "call_echo", "name": "terminal", "arguments": {"command": "echo hi"}}},
            ],
        },
        {"match": {"last_message_contains": "hi"}, "steps": [{"text": "It printed hi."}]},
        {"repeat": True, "steps": [{"text": "Just text."}]},
    ],
}


@contextlib.asynccontextmanager
async def _v2_agent(tmp_path: Path, home: Path, scenario: dict[str, Any] = SCENARIO) -> AsyncIterator[V2Peer]:
    """``hermes-acp`` on ``home`` with a v2 client on its stdio (raw frames)."""
    async with serve_model_server(scenario) as model:
        config = f'[providers.fx]\nkind = "openai"\nbase_url = "{model.openai_base_url}"\nmodels = ["m"]\n'
        (home / "config.toml").write_text(pin_sandbox(config))
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "HERMES_ACP_HOME": str(home)}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "hermes_acp",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env={**env, "PYTHONPATH": str(REPO)},
            limit=FRAME_LIMIT,
        )
        assert process.stdin is not None and process.stdout is not None
        raw = RawPair(process.stdout, process.stdin)
        try:
            async with v2_peer(raw) as peer:
                yield peer
        finally:
            process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), EXIT_TIMEOUT_S)
            except TimeoutError:
                process.kill()
                await process.wait()
        raw.frames.check(version=2)


async def _dont_ask_session(peer: V2Peer, workspace: Path) -> tuple[str, list[dict[str, Any]]]:
    """A new session in ``dont_ask`` (commands run without a question): its id and its options."""
    session_id: str = (await peer.request("session/new", {"cwd": str(workspace)}))["sessionId"]
    mode = {"sessionId": session_id, "configId": "mode", "type": "id", "value": "dont_ask"}
    return session_id, (await peer.request("session/set_config_option", mode))["configOptions"]


async def _live_then_replayed(
    peer: V2Peer, session_id: str, workspace: Path
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Once the prompt's turn is idle: what it showed live, then what a resume from the start replays after a
    close."""
    await peer.wait_for(lambda: any(s.get("state") == "idle" for s in peer.states(session_id)), timeout=60)
    live = peer.updates(session_id)
    await peer.request("session/close", {"sessionId": session_id})
    at = len(peer.messages)
    resume = {"sessionId": session_id, "cwd": str(workspace), "replayFrom": START}
    await peer.request("session/resume", resume)
    return live, [m["params"]["update"] for m in peer.messages[at:] if m.get("method") == "session/update"]


def _fold(updates: list[dict[str, Any]]) -> dict[str, Any]:
    """What a v2 client ends up showing: each message's content by id, each tool call's last status and content."""
    messages: dict[str, str] = {}
    calls: dict[str, dict[str, Any]] = {}
    for update in updates:
        kind = update["sessionUpdate"]
        if kind in ("user_message", "agent_message", "agent_thought"):
            messages[update["messageId"]] = "".join(block.get("text", "") for block in update.get("content") or [])
        elif kind in ("agent_message_chunk", "agent_thought_chunk"):
            messages[update["messageId"]] = messages.get(update["messageId"], "") + update["content"]["text"]
        elif kind == "tool_call_update":
            card = calls.setdefault(update["toolCallId"], {})
            card.update({k: v for k, v in update.items() if k in ("status", "title", "kind", "content")})
    return {"messages": messages, "calls": calls}


async def test_a_session_made_on_v1_is_resumed_on_v2_with_the_same_history(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with spawn_agent(tmp_path / "v1", SCENARIO, home=home, client=RecordingClient(answers=["allow_once"])) as v1:
        session_id = await v1.new_session()
        assert (await v1.prompt(session_id, "run it")).stop_reason == "end_turn"
        shown_v1 = v1.client.text(session_id)
    async with _v2_agent(tmp_path, home) as peer:
        workspace = str(tmp_path / "v1" / "workspace")
        at = len(peer.messages)
        resumed = await peer.request(
            "session/resume", {"sessionId": session_id, "cwd": workspace, "replayFrom": {"type": "start"}}
        )
        # What came before the answer: the reader may already hold what follows it (the commands, sent after it).
        answer = next(i for i in range(at, len(peer.messages)) if peer.messages[i].get("result") is resumed)
        replayed = [m["params"]["update"] for m in peer.messages[at:answer] if m.get("method") == "session/update"]
    assert resumed["_meta"]["hermes"]["recovery"] == "full"
    folded = _fold(replayed)
    texts = list(folded["messages"].values())
    assert texts[0] == "run it" and "".join(texts[1:]).replace("A command first.", "") == shown_v1
    assert folded["calls"]["call_echo"]["status"] == "completed"
    assert {"type": "terminal", "terminalId": "call_echo"} in folded["calls"]["call_echo"]["content"]
    assert replayed[-1] == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}


async def test_a_session_made_on_v2_loads_on_v1_and_its_replay_folds_as_it_was_shown_live(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with _v2_agent(tmp_path, home) as peer:
        session_id, options = await _dont_ask_session(peer, workspace)
        assert next(o for o in options if o["configId"] == "mode")["currentValue"] == "dont_ask"
        await peer.request("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "run it"}]})
        live, replayed = await _live_then_replayed(peer, session_id, workspace)
    assert _fold(replayed) == _fold(live), "live and replayed frames show the same"
    async with spawn_agent(tmp_path / "v1", SCENARIO, home=home) as v1:
        await v1.conn.load_session(session_id=session_id, cwd=str(workspace), mcp_servers=[])
        user = v1.client.text(session_id, kind="user_message_chunk")
        cards = v1.client.cards(session_id)
    assert user == "run it"
    assert v1.client.text(session_id) == "Running it.It printed hi."
    assert cards["call_echo"]["status"] == "completed"


STOPPED = "echo before; echo started > ready.fifo; sleep 300"
STOPPING = {
    "name": "terminal-cancel",
    "responses": [
        {
            "match": {"last_message_contains": "run it"},
            "steps": [{"tool_call": {"id": "call_wait", "name": "terminal", "arguments": {"command": STOPPED}}}],
        },
        {"match": {"last_message_contains": "Stopped from the editor"}, "steps": [{"text": "You stopped it."}]},
        {"repeat": True, "steps": [{"text": "Not what was expected."}]},
    ],
}


async def test_terminal_cancel_stops_a_command_of_the_real_process_and_the_replay_shows_how_it_ended(
    tmp_path: Path,
) -> None:
    """The editor reloads the session while the command runs (a resume from the start): the replay offers the
    cancels that still hold, and the cancel it then sends stops the command."""
    home = tmp_path / "home"
    home.mkdir()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    ready = workspace / "ready.fifo"
    os.mkfifo(ready)
    async with _v2_agent(tmp_path, home, STOPPING) as peer:
        session_id, _ = await _dont_ask_session(peer, workspace)
        await peer.request("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "run it"}]})
        with anyio.fail_after(30):
            assert await anyio.to_thread.run_sync(ready.read_text, abandon_on_cancel=True) == "started\n"
        at = len(peer.messages)
        await peer.request("session/resume", {"sessionId": session_id, "cwd": str(workspace), "replayFrom": START})
        offered = [
            u
            for u in (m["params"]["update"] for m in peer.messages[at:] if m.get("method") == "session/update")
            if "capabilities" in u
        ]
        assert await peer.request("terminal/cancel", {"sessionId": session_id, "terminalId": "call_wait"}) == {}
        live, replayed = await _live_then_replayed(peer, session_id, workspace)
    assert offered == [
        {"sessionUpdate": "terminal_update", "terminalId": "call_wait", "capabilities": {"cancel": {}}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "call_wait", "capabilities": {"cancel": {}}},
    ], "a resume mid-command offers the cancels that still hold"
    folded = _fold(live)
    assert folded == _fold(replayed), "live and replayed frames show the same"
    assert folded["calls"]["call_wait"]["status"] == "failed"
    assert "You stopped it." in folded["messages"].values(), "the model was told the user stopped the command"
    assert peer.states(session_id)[-1]["stopReason"] == "end_turn"
    for updates in (live, replayed):
        [ended] = [u for u in updates if u["sessionUpdate"] == "terminal_update" and "exitStatus" in u]
        assert ended["exitStatus"].get("signal") in {"SIGTERM", "SIGKILL"}, ended
