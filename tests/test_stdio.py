"""The one subprocess test of the foundation: the real ``hermes-acp`` process over stdio.

Every stdout line must be a JSON-RPC message from the first byte; a SIGKILL mid-life loses nothing that was
stored, so a fresh process lists and loads the sessions.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp.client.connection import ClientSideConnection

from tests.fakes.acp_client import RecordingClient

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parent.parent


@dataclass
class Agent:
    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    client: RecordingClient
    stdout_lines: list[bytes] = field(default_factory=list)


@contextlib.asynccontextmanager
async def spawn(home: Path, stderr_path: Path, extra_env: dict[str, str] | None = None) -> AsyncIterator[Agent]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home.parent),
        "HERMES_ACP_HOME": str(home),
        "PYTHONPATH": str(REPO),
        **(extra_env or {}),
    }
    with stderr_path.open("ab") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "hermes_acp",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=env,
        )
    assert process.stdout is not None
    assert process.stdin is not None
    tee = asyncio.StreamReader(limit=50 * 1024 * 1024)
    client = RecordingClient()
    agent = Agent(acp.connect_to_agent(client, process.stdin, tee, use_unstable_protocol=True), process, client)

    async def copy_stdout() -> None:
        assert process.stdout is not None
        while line := await process.stdout.readline():
            agent.stdout_lines.append(line)
            tee.feed_data(line)
        tee.feed_eof()

    async with anyio.create_task_group() as tg:
        tg.start_soon(copy_stdout)
        try:
            yield agent
        finally:
            await agent.conn.close()
            if process.returncode is None:
                process.kill()
            with anyio.fail_after(10):
                await process.wait()


def assert_json_rpc_only(lines: list[bytes]) -> None:
    assert lines, "the agent wrote nothing"
    for line in lines:
        message: Any = json.loads(line)
        assert message["jsonrpc"] == "2.0", line
        assert "method" in message or "id" in message, line


async def test_real_process_speaks_only_json_rpc_and_survives_sigkill(tmp_path: Path) -> None:
    home = tmp_path / "home"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    stderr_log = tmp_path / "stderr.log"
    async with spawn(home, stderr_log) as agent:
        with anyio.fail_after(30):
            init = await agent.conn.initialize(protocol_version=1)
            first = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
            second = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
            await agent.conn.prompt(session_id=first.session_id, prompt=[acp.text_block("/title Survives a kill")])
        agent.process.send_signal(signal.SIGKILL)
        with anyio.fail_after(10):
            await agent.process.wait()
        assert_json_rpc_only(agent.stdout_lines)
    assert init.protocol_version == 1
    async with spawn(home, stderr_log) as agent:
        with anyio.fail_after(30):
            await agent.conn.initialize(protocol_version=1)
            listed = await agent.conn.list_sessions(cwd=str(workspace))
            await agent.conn.load_session(cwd=str(workspace), session_id=first.session_id, mcp_servers=[])
        titles = [s.title for s in listed.sessions if s.session_id == first.session_id]
        replayed = agent.client.text(first.session_id)
        assert_json_rpc_only(agent.stdout_lines)
    assert {s.session_id for s in listed.sessions} == {first.session_id, second.session_id}
    assert titles == ["Survives a kill"]
    assert "Session renamed." in replayed
    assert json.loads(stderr_log.read_text().splitlines()[-1])["level"]
