"""The threaded stdio transport Windows uses (a reader and a writer thread), forced on Linux with
``HERMES_ACP_PORTABLE=stdio``, through the real ``python -m hermes_acp`` process: it answers ``initialize``, serves a
turn, cancels a held one, and ends at stdin's EOF, at SIGTERM and at the first write after the client closed stdout,
within 2 s, leaving nothing but JSON-RPC on stdout.
The log names the transport that served (``stdio-threads``; the pipes are ``stdio``)."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from hermes_acp.transports.stdio import PIPES, THREADED
from tests.fakes.agent_process import AgentProcess, spawn_agent

pytestmark = pytest.mark.anyio

SHUTDOWN_S = 2.0
"""The bound on the way out once the client left or SIGTERM came (no turn running)."""
FORCED = {"HERMES_ACP_PORTABLE": "stdio"}
TURNS: dict[str, Any] = {
    "name": "turn-then-held",
    "responses": [
        {"match": {"last_message_contains": "talk"}, "steps": [{"text": "a long answer"}], "chunk_size": 2,
         "hold_after_chunks": 2},
        {"repeat": True, "steps": [{"text": "Hello from the threads."}]},
    ],
}  # fmt: skip


def _transport(agent: AgentProcess) -> str:
    """The transport the log says served this process."""
    lines = [json.loads(line) for line in (agent.home / "logs" / "hermes-acp.log").read_text().splitlines()]
    (serving,) = [line for line in lines if line["event"] == "hermes-acp serving"]
    return str(serving["transport"])


async def _exit_code(agent: AgentProcess) -> int:
    with anyio.fail_after(SHUTDOWN_S):
        return await agent.process.wait()


async def test_the_threads_serve_a_turn_a_cancel_and_end_at_eof(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, TURNS, env=FORCED) as agent:
        session_id = await agent.new_session()
        done = await agent.prompt(session_id, "say hello")
        assert done.stop_reason == "end_turn"
        assert "Hello from the threads." in agent.client.text(session_id)
        before = len(agent.client.of_kind("agent_message_chunk", session_id))
        async with anyio.create_task_group() as group:
            answers: list[Any] = []

            async def held() -> None:
                answers.append(await agent.prompt(session_id, "talk"))

            group.start_soon(held)
            await agent.client.wait_for(lambda: len(agent.client.of_kind("agent_message_chunk", session_id)) > before)
            await agent.conn.cancel(session_id=session_id)
        assert [answer.stop_reason for answer in answers] == ["cancelled"]
        assert agent.process.stdin is not None
        agent.process.stdin.close()
        code = await _exit_code(agent)
        agent.assert_json_rpc_only()
        transport = _transport(agent)
    assert code == 0
    assert transport == THREADED


async def test_a_closed_stdout_ends_the_threads_at_the_next_write(tmp_path: Path) -> None:
    """The threads learn that the client closed its end of stdout when a write fails (Windows gives no earlier
    sign; the pipes see it at once): the answer to the next request cannot be written, and the server leaves as at
    stdin's EOF."""
    async with spawn_agent(tmp_path, env=FORCED) as agent:
        await agent.new_session()
        transport = agent.process._transport  # type: ignore[attr-defined]  # asyncio's: the read end of its stdout
        transport.get_pipe_transport(1).close()
        assert agent.process.stdin is not None
        agent.process.stdin.write(b'{"jsonrpc": "2.0", "id": "after", "method": "session/list", "params": {}}\n')
        await agent.process.stdin.drain()
        code = await _exit_code(agent)
        transport_name = _transport(agent)
    assert code == 0
    assert transport_name == THREADED


@pytest.mark.parametrize(("env", "served_by"), [(FORCED, THREADED), ({"HERMES_ACP_PORTABLE": ""}, PIPES)])
async def test_sigterm_ends_the_server_on_either_transport(tmp_path: Path, env: dict[str, str], served_by: str) -> None:
    async with spawn_agent(tmp_path, env=env) as agent:
        await agent.new_session()
        agent.process.send_signal(signal.SIGTERM)
        code = await _exit_code(agent)
        agent.assert_json_rpc_only()
        transport = _transport(agent)
    assert code == 0
    assert transport == served_by
