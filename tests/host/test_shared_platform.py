"""Shared mode and the platform seam, through real processes: a runtime folder whose socket path would pass the
Unix limit moves the socket to a short folder that the front door, the host it starts, ``host status`` and
``--check`` all find (with the front door's relay on ``select`` and on the threads Windows would use), and shared
mode refused as on Windows (``HERMES_ACP_PORTABLE=refuse-shared``): ``--shared``, ``[host] mode = "shared"`` and
``host`` exit 2 and say why, the front door as the answer to the editor's ``initialize`` too."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import anyio
import pytest

from hermes_acp.platform.system import SHARED_MODE_REFUSAL
from hermes_acp.transports.paths import host_paths
from tests.fakes.agent_process import REPO
from tests.fakes.host_process import shared_home

pytestmark = pytest.mark.anyio

WAIT_S = 30.0
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}


@pytest.mark.parametrize("relay", ["select", "threads"])
async def test_a_socket_path_too_long_moves_and_the_front_door_and_host_status_agree(
    tmp_path: Path, relay: str
) -> None:
    async with shared_home(tmp_path) as shared:
        long_runtime = tmp_path / ("r" * 80)
        long_runtime.mkdir(mode=0o700)
        shared.env["XDG_RUNTIME_DIR"] = str(long_runtime)
        shared.env["HERMES_ACP_PORTABLE"] = "stdio" if relay == "threads" else ""
        paths = host_paths(shared.env)
        try:
            assert paths.note is not None and paths.directory.startswith("/tmp/hermes-acp-")
            async with shared.front_door() as door:
                session = (await door.conn.new_session(cwd=str(shared.workspace), mcp_servers=[])).session_id
                answer = await door.prompt(session, "hello")
                assert answer.stop_reason == "end_turn"
                assert door.process.stdin is not None
                door.process.stdin.close()  # the editor leaves: the relay passes the EOF on and ends
                with anyio.fail_after(WAIT_S):
                    assert await door.process.wait() == 0
            done = await shared.command("host", "status")
            status = json.loads(done.stdout)
            assert done.returncode == 0, done.stderr
            assert status["socket"] == paths.socket
            assert status["socket_note"] == paths.note
            assert [s["sessionId"] for s in status["sessions"]] == [session]
            assert paths.note in done.stderr.decode()
            check = (await shared.command("--check")).stdout.decode()
            assert f"session host socket (--shared): {paths.socket}\n    ({paths.note})" in check
        finally:
            await shared.stop_host()
            shutil.rmtree(paths.directory, ignore_errors=True)


async def _refused(argv: list[str], env: dict[str, str], stdin: bytes) -> tuple[int, bytes, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hermes_acp",
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    with anyio.fail_after(WAIT_S):
        stdout, stderr = await process.communicate(stdin)
    assert process.returncode is not None
    return process.returncode, stdout, stderr.decode()


async def test_shared_mode_refused_as_on_windows_answers_initialize_and_exits_2(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "HERMES_ACP_HOME": str(home),
        "XDG_RUNTIME_DIR": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "HERMES_ACP_PORTABLE": "refuse-shared",
    }
    request = json.dumps(INITIALIZE).encode() + b"\n"
    for argv, extra in ((["--shared"], {}), ([], {"HERMES_ACP_HOST__MODE": "shared"})):
        code, stdout, stderr = await _refused(argv, {**env, **extra}, request)
        assert code == 2
        answer = json.loads(stdout)
        message = f"--shared: {SHARED_MODE_REFUSAL}"
        assert answer == {"jsonrpc": "2.0", "id": 0, "error": {"code": -32603, "message": message}}
        assert f"hermes-acp: {message}" in stderr
    for argv in (["host"], ["host", "status"], ["host", "stop"], ["host", "token"]):
        code, stdout, stderr = await _refused(argv, env, b"")
        assert (code, stdout) == (2, b""), argv
        assert stderr == f"hermes-acp host: {SHARED_MODE_REFUSAL}\n"
    assert not home.exists(), "nothing was started or written"
