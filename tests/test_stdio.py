"""The foundation's subprocess test: the real ``hermes-acp`` process over stdio.

Every stdout line must be a JSON-RPC message from the first byte; a SIGKILL mid-life loses nothing that was
stored, so a fresh process lists and loads the sessions.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import anyio
import pytest

from tests.fakes.acp_client import text_block
from tests.fakes.agent_process import spawn_agent

pytestmark = pytest.mark.anyio


async def test_real_process_speaks_only_json_rpc_and_survives_sigkill(tmp_path: Path) -> None:
    home = tmp_path / "home"
    workspace = tmp_path / "workspace"
    async with spawn_agent(tmp_path, home=home, initialize=False) as agent:
        with anyio.fail_after(30):
            init = await agent.initialize()
            first = await agent.new_session()
            second = await agent.new_session()
            await agent.conn.prompt(session_id=first, prompt=[text_block("/title Survives a kill")])
        agent.process.send_signal(signal.SIGKILL)
        with anyio.fail_after(10):
            await agent.process.wait()
        agent.assert_json_rpc_only()
        stderr_log = agent.stderr_path
    async with spawn_agent(tmp_path / "again", home=home) as agent:
        with anyio.fail_after(30):
            listed = await agent.conn.list_sessions(cwd=str(workspace))
            await agent.conn.load_session(cwd=str(workspace), session_id=first, mcp_servers=[])
        titles = [s.title for s in listed.sessions if s.session_id == first]
        replayed = agent.client.text(first)
        agent.assert_json_rpc_only()
    assert init.protocol_version == 1
    assert {s.session_id for s in listed.sessions} == {first, second}
    assert titles == ["Survives a kill"]
    assert "Session renamed to “Survives a kill”." in replayed
    quiet = [json.loads(line) for line in stderr_log.read_text().splitlines()]
    assert all(line["level"] in ("warning", "error", "critical") for line in quiet), "stderr shows no info lines"
    kept = [json.loads(line) for line in (home / "logs" / "hermes-acp.log").read_text().splitlines()]
    assert any(line["event"] == "hermes-acp serving" and line["level"] == "info" for line in kept)
