"""The turn loop through the real ``python -m hermes_acp`` process and the scripted model server: a multi-tool
turn streams, settles and replays identically in a fresh process; a tool interrupted by SIGKILL is shown as
failed with "outcome unknown" after a reload and is never run again."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes.agent_process import AgentProcess, spawn_agent

pytestmark = pytest.mark.anyio

MULTI_TOOL: dict[str, Any] = {
    "name": "multi-tool",
    "responses": [
        {
            "match": {"last_message_contains": "set up the project"},
            "steps": [
                {"reasoning": "A plan, a file, then a check."},
                {"text": "Setting it up."},
                {
                    "tool_call": {
                        "id": "call_plan",
                        "name": "update_plan",
                        "arguments": {"steps": [{"content": "write notes", "status": "in_progress"}]},
                    }
                },
                {
                    "tool_call": {
                        "id": "call_write",
                        "name": "write_file",
                        "arguments": {"path": "notes.md", "content": "# Notes\n"},
                    }
                },
                {"tool_call": {"id": "call_run", "name": "terminal", "arguments": {"command": "wc -l notes.md"}}},
            ],
        },
        {"match": {"last_message_contains": "notes.md"}, "steps": [{"text": "The project is set up."}]},
    ],
}


async def test_multi_tool_turn_streams_settles_and_replays_identically_in_a_new_process(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with spawn_agent(tmp_path, MULTI_TOOL, home=home) as agent:
        session_id = await agent.new_session()
        await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
        with anyio.fail_after(30):
            response = await agent.prompt(session_id, "Please set up the project")
        await agent.client.wait_for(lambda: bool(agent.client.transcript(session_id)["titles"]))
        live = agent.client.transcript(session_id)
        chunks = [u for s, u in agent.client.updates if s == session_id and u["sessionUpdate"] == "agent_message_chunk"]
        agent.assert_json_rpc_only()
    async with spawn_agent(tmp_path / "second", MULTI_TOOL, home=home) as agent:
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(tmp_path / "workspace"), session_id=session_id, mcp_servers=[])
        replayed = agent.client.transcript(session_id)
    assert response.stop_reason == "end_turn"
    assert len(chunks) > 2, "the answer was streamed in pieces"
    assert set(live["cards"]) == {"call_plan", "call_write", "call_run"}
    assert all(card["status"] == "completed" for card in live["cards"].values())
    assert live["cards"]["call_write"]["content"][0]["type"] == "diff"
    assert replayed == live


HANGING_TOOL: dict[str, Any] = {
    "name": "hanging-tool",
    "responses": [
        {
            "match": {"last_message_contains": "start the long job"},
            "steps": [
                {
                    "tool_call": {
                        "id": "call_long_job",
                        "name": "terminal",
                        "arguments": {
                            "command": "echo started >> runs.log; echo job-started; exec sleep 120",
                            "timeout_s": 300,
                        },
                    }
                }
            ],
        },
        {"repeat": True, "steps": [{"text": "Understood."}]},
    ],
}


async def test_a_tool_running_when_the_server_is_killed_is_shown_failed_and_never_rerun(tmp_path: Path) -> None:
    home = tmp_path / "home"
    workspace = tmp_path / "workspace"
    async with spawn_agent(tmp_path, HANGING_TOOL, home=home) as agent:
        session_id = await agent.new_session()
        await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, session_id, "Please start the long job")
            await agent.client.wait_for(lambda: _output_seen(agent, session_id, "job-started"), timeout=30)
            agent.process.send_signal(signal.SIGKILL)
            tg.cancel_scope.cancel()
        with anyio.fail_after(10):
            await agent.process.wait()
    _kill_orphans(workspace)
    async with spawn_agent(tmp_path / "second", HANGING_TOOL, home=home) as agent:
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
            card = agent.client.cards(session_id)["call_long_job"]
            after = await agent.prompt(session_id, "What happened to the job?")
        history = agent.model_requests()[-1].body["messages"]
    assert card["status"] == "failed"
    assert "outcome unknown" in card["content"][0]["content"]["text"]
    assert after.stop_reason == "end_turn"
    assert (workspace / "runs.log").read_text().splitlines() == ["started"], "the command ran exactly once"
    results = [m for m in history if m.get("role") == "tool" and m.get("tool_call_id") == "call_long_job"]
    assert len(results) == 1
    assert "outcome unknown" in str(results[0]["content"])


def _output_seen(agent: AgentProcess, session_id: str, text: str) -> bool:
    return any(
        text in str(u.get("content"))
        for s, u in agent.client.updates
        if s == session_id and u["sessionUpdate"] == "tool_call_update" and u.get("toolCallId") == "call_long_job"
    )


def _kill_orphans(workspace: Path) -> None:
    """The SIGKILLed server could not stop its command: end it (it runs `sleep 120` in the workspace)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if cwd == str(workspace) and cmdline.startswith(b"sleep\x00120"):
            os.kill(int(entry.name), signal.SIGKILL)


BIG_WRITE: dict[str, Any] = {
    "name": "big-write",
    "responses": [
        {
            "match": {"last_message_contains": "write the big file"},
            "steps": [
                {
                    "tool_call": {
                        "id": "call_big",
                        "name": "write_file",
                        "arguments": {"path": "big.txt", "content": "x" * 100_000},
                    }
                }
            ],
        },
        {"repeat": True, "steps": [{"text": "Written."}]},
    ],
}


async def test_a_frame_over_64_kib_reaches_the_client(tmp_path: Path) -> None:
    """The tool card of a 100 kB write is one stdout line past asyncio's default 64 KiB line limit."""
    async with spawn_agent(tmp_path, BIG_WRITE) as agent:
        session_id = await agent.new_session()
        await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
        with anyio.fail_after(30):
            response = await agent.prompt(session_id, "Please write the big file")
        card = agent.client.cards(session_id)["call_big"]
    assert max(len(line) for line in agent.stdout_lines) > 64 * 1024
    assert response.stop_reason == "end_turn"
    assert card["status"] == "completed"
    assert (tmp_path / "workspace" / "big.txt").read_text() == "x" * 100_000
