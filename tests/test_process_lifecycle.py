"""The client leaving stops the work, through the real ``python -m hermes_acp`` process: stdin's EOF and SIGTERM,
SIGINT and SIGHUP cancel the running turn at once, settle its cards in the log, start no further tool call, stop
every child (the running command, the stdio MCP servers) and end the process without a traceback."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes.agent_process import REPO, AgentProcess, portable_env, spawn_agent

pytestmark = pytest.mark.anyio

LONG_JOB: dict[str, Any] = {
    "name": "long-job",
    "responses": [
        {
            "match": {"last_message_contains": "start the long job"},
            "steps": [
                {
                    "tool_call": {
                        "id": "call_long",
                        "name": "terminal",
                        "arguments": {"command": "echo job-started; exec sleep 97.5", "timeout_s": 300},
                    }
                }
            ],
        },
        {
            "match": {"last_message_contains": "job"},
            "steps": [{"tool_call": {"id": "call_after", "name": "terminal", "arguments": {"command": "touch after"}}}],
        },
        {"repeat": True, "steps": [{"text": "Understood."}]},
    ],
}
STREAMING: dict[str, Any] = {
    "name": "held-stream",
    "responses": [{"steps": [{"text": "a long answer that never ends"}], "chunk_size": 4, "hold_after_chunks": 2}],
}


def _processes_with(marker: str) -> list[int]:
    """Processes whose command line contains ``marker`` (this test's own, unique to it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _started(agent: AgentProcess, session_id: str) -> bool:
    return any(
        "job-started" in str(u.get("content"))
        for s, u in agent.client.updates
        if s == session_id and u.get("toolCallId") == "call_long"
    )


async def _start_long_job(agent: AgentProcess, mcp: list[dict[str, Any]] | None = None) -> str:
    session_id = await agent.new_session(mcp_servers=mcp) if mcp else await agent.new_session()
    await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
    return session_id


def _no_traceback_at_error_level(agent: AgentProcess) -> None:
    for line in agent.stderr_path.read_text().splitlines():
        record = json.loads(line)
        assert record["level"] not in ("error", "critical") or "exception" not in record, line


async def _settled_in_the_log(tmp_path: Path, home: Path, session_id: str) -> dict[str, Any]:
    async with spawn_agent(tmp_path / "reload", LONG_JOB, home=home) as agent:
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(tmp_path / "workspace"), session_id=session_id, mcp_servers=[])
        return agent.client.cards(session_id)


async def test_stdin_closing_mid_command_cancels_the_turn_stops_the_command_and_runs_nothing_more(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    async with spawn_agent(tmp_path, LONG_JOB, home=home) as agent:
        session_id = await _start_long_job(agent)
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, session_id, "Please start the long job")
            await agent.client.wait_for(lambda: _started(agent, session_id), timeout=30)
            assert _processes_with("97.5"), "the command is running"
            assert agent.process.stdin is not None
            agent.process.stdin.close()
            with anyio.fail_after(10):
                code = await agent.process.wait()
            tg.cancel_scope.cancel()
        _no_traceback_at_error_level(agent)
    assert code == 0
    assert _processes_with("97.5") == [], "the command did not outlive the agent"
    assert not (tmp_path / "workspace" / "after").exists(), "no tool call started after the client left"
    cards = await _settled_in_the_log(tmp_path, home, session_id)
    assert cards["call_long"]["status"] == "failed"
    assert "Cancelled" in cards["call_long"]["content"][0]["content"]["text"]
    assert "call_after" not in cards


async def test_stdout_closing_mid_command_takes_the_same_path_as_stdin_s_eof(tmp_path: Path) -> None:
    """The editor closes its end of our stdout (EPIPE on the next write) while a command runs and nothing is
    written: the turn is cancelled, the command stopped, nothing more runs, and the process exits. The pipes see it
    at once; the threaded transport (Windows, ``HERMES_ACP_PORTABLE=stdio``) only at its next write, which
    tests/test_stdio_threaded.py checks."""
    if "stdio" in portable_env().get("HERMES_ACP_PORTABLE", "").split(","):
        pytest.skip("the threaded stdio transport learns of a closed stdout at its next write, not while idle")
    home = tmp_path / "home"
    async with spawn_agent(tmp_path, LONG_JOB, home=home) as agent:
        session_id = await _start_long_job(agent)

        async def prompt() -> None:
            with contextlib.suppress(ConnectionError):  # we stop reading its answers
                await agent.prompt(session_id, "Please start the long job")

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt)
            await agent.client.wait_for(lambda: _started(agent, session_id), timeout=30)
            assert _processes_with("97.5"), "the command is running"
            transport = agent.process._transport  # type: ignore[attr-defined]  # the read end of its stdout
            transport.get_pipe_transport(1).close()
            with anyio.fail_after(10):
                code = await agent.process.wait()
            tg.cancel_scope.cancel()
        _no_traceback_at_error_level(agent)
    assert code == 0
    assert _processes_with("97.5") == [], "the command did not outlive the agent"
    assert not (tmp_path / "workspace" / "after").exists(), "no tool call started after the client left"
    cards = await _settled_in_the_log(tmp_path, home, session_id)
    assert cards["call_long"]["status"] == "failed"
    assert "call_after" not in cards


async def test_stdin_closing_mid_stream_ends_the_process(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, STREAMING) as agent:
        session_id = await agent.new_session()
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, session_id, "talk")
            await agent.client.wait_for(lambda: bool(agent.client.of_kind("agent_message_chunk", session_id)))
            assert agent.process.stdin is not None
            agent.process.stdin.close()
            with anyio.fail_after(10):
                code = await agent.process.wait()
            tg.cancel_scope.cancel()
        _no_traceback_at_error_level(agent)
    assert code == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
async def test_a_termination_signal_settles_the_turn_and_leaves_no_child_behind(
    tmp_path: Path, signum: signal.Signals
) -> None:
    home = tmp_path / "home"
    journal = tmp_path / f"mcp-{signum.name}.jsonl"
    server = {
        "name": "fixture",
        "command": sys.executable,
        "args": ["-m", "fixtures.mcp_server", "--journal", str(journal)],
        "env": [{"name": "PYTHONPATH", "value": str(REPO)}],
    }
    async with spawn_agent(tmp_path, LONG_JOB, home=home) as agent:
        session_id = await _start_long_job(agent, [server])
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, session_id, "Please start the long job")
            await agent.client.wait_for(lambda: _started(agent, session_id), timeout=30)
            assert _processes_with(str(journal)), "the MCP server is running"
            agent.process.send_signal(signum)
            with anyio.fail_after(10):
                code = await agent.process.wait()
            tg.cancel_scope.cancel()
        _no_traceback_at_error_level(agent)
    assert code == 0
    assert _processes_with("97.5") == [], "the command did not outlive the agent"
    assert _processes_with(str(journal)) == [], "the MCP server did not outlive the agent"
    cards = await _settled_in_the_log(tmp_path, home, session_id)
    assert cards["call_long"]["status"] == "failed"
    assert os.path.exists(tmp_path / "workspace") and not (tmp_path / "workspace" / "after").exists()
