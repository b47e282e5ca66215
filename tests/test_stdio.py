"""The foundation's subprocess test: the real ``hermes-acp`` process over stdio.

Every stdout line must be a JSON-RPC message from the first byte; a SIGKILL mid-life loses nothing that was
stored, so a fresh process lists and loads the sessions.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import anyio
import pytest

from registry.launch_check import auth_method_types, empty_stdin_problems, handshake_problems
from tests.fakes.acp_client import text_block
from tests.fakes.agent_process import REPO, portable_env, spawn_agent

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


@pytest.mark.parametrize("stdin", ["devnull", "empty_file"])
async def test_stdin_at_end_of_file_exits_cleanly_at_once(tmp_path: Path, stdin: str) -> None:
    """How the ACP Registry starts an agent first (stdin from /dev/null, which the event loop cannot poll), and a
    regular file: the server sees the end of its input and exits 0 with nothing on stdout."""
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "HERMES_ACP_HOME": str(tmp_path / "home"),
        **portable_env(),
    }
    with open(os.devnull, "rb") if stdin == "devnull" else empty.open("rb") as source, anyio.fail_after(20):
        done = await anyio.run_process(
            [sys.executable, "-m", "hermes_acp"], stdin=source, env={**env, "PYTHONPATH": str(REPO)}, check=False
        )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""


def test_the_registry_launch_check_passes_on_the_real_process(tmp_path: Path) -> None:
    """registry/launch_check.py, as the CI lane runs it on the installed wheel, here on the source tree."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "HERMES_ACP_HOME": str(tmp_path / "home"),
        "PYTHONPATH": str(REPO),
        **portable_env(),
    }
    command = [sys.executable, "-m", "hermes_acp"]
    assert empty_stdin_problems(command, env, timeout_s=20) == []
    problems, answer = handshake_problems(command, env, timeout_s=20)
    assert problems == []
    assert {"agent", "terminal"} & set(auth_method_types(answer["result"]["authMethods"]))
    failing = [sys.executable, "-c", "import sys; print('hello'); sys.exit(3)"]
    assert any("status 3" in p for p in empty_stdin_problems(failing, env, timeout_s=20))
    assert any("other than JSON-RPC" in p for p in empty_stdin_problems(failing, env, timeout_s=20))
    assert handshake_problems(failing, env, timeout_s=20)[0] == [
        "stdout carried something other than JSON-RPC: 'hello'"
    ]
