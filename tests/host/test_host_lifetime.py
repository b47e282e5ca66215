"""The session host's life and faults, through real processes: ``host status`` / ``stop``, the idle exit, a front
door that starts the host, versions that differ, a host killed mid-turn (the next one recovers from the log), the
private socket directory and the peer-uid check, and ``session/status``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import stat
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from hermes_acp.transports.paths import HELLO_KEY, encode_line, host_paths, private_dir
from tests.fakes.host_process import shared_home

pytestmark = pytest.mark.anyio

WAIT_S = 30.0


async def test_host_status_reports_the_host_and_stop_ends_it(tmp_path: Path) -> None:
    async with shared_home(tmp_path) as shared:
        code, status = await shared.status()
        assert code == 3 and status is None
        host = await shared.start_host()
        code, status = await shared.status()
        assert code == 0 and status is not None
        assert status["pid"] == host.pid
        assert status["home"] == str(shared.home)
        assert status["connections"] == 0
        done = await shared.command("host", "stop")
        assert done.returncode == 0, done.stderr
        with anyio.fail_after(WAIT_S):
            assert await host.wait() == 0
        code, _ = await shared.status()
        assert code == 3


async def test_the_host_exits_after_idle_exit_s_without_connections(tmp_path: Path) -> None:
    async with shared_home(tmp_path, config_extra="\n[host]\nidle_exit_s = 0.2\n") as shared:
        host = await shared.start_host()
        with anyio.fail_after(WAIT_S):
            assert await host.wait() == 0
        assert shared.record() is None


async def test_a_front_door_starts_a_host_when_none_runs_and_the_session_outlives_it(tmp_path: Path) -> None:
    async with shared_home(tmp_path) as shared:
        async with shared.front_door() as door:
            session = (await door.conn.new_session(cwd=str(shared.workspace), mcp_servers=[])).session_id
            answer = await door.request("session/status", {"sessionId": session})
            assert answer["result"] == {"status": "open"}
            missing = await door.request("session/status", {"sessionId": "no-such-session"})
            assert missing["error"]["code"] == -32002
            assert missing["error"]["data"]["sessionId"] == "no-such-session"
            listed = await door.request("session/list", {})
            meta = listed["result"]["sessions"][0]["_meta"]["hermes"]
            assert meta == {"status": "open", "running": False, "attached": 1, "queue": []}
        code, status = await shared.status()
        assert code == 0 and status is not None
        assert [s["sessionId"] for s in status["sessions"]] == [session]
        assert status["sessions"][0]["attached"] == 0, "the front door left; the session stays open in the host"


async def test_a_host_of_another_version_refuses_the_hello_and_says_how_to_stop_it(tmp_path: Path) -> None:
    async with shared_home(tmp_path) as shared:
        await shared.start_host()
        paths = host_paths(shared.env)
        reader, writer = await asyncio.open_unix_connection(paths.socket)
        writer.write(encode_line({HELLO_KEY: 1, "version": "0.0.1", "env": {}}))
        await writer.drain()
        with anyio.fail_after(WAIT_S):
            answer = json.loads(await reader.readline())
        writer.close()
        await writer.wait_closed()
    assert answer["ok"] is False
    assert "0.0.1" in answer["error"] and "hermes-acp host stop" in answer["error"]


async def test_a_front_door_refused_by_the_host_answers_the_editor_with_why_and_exits(tmp_path: Path) -> None:
    """A stand-in host that refuses the hello as one of another version does: the front door tells the editor."""
    async with shared_home(tmp_path) as shared:
        paths = host_paths(shared.env)
        private_dir(paths.directory)
        refusal = "a hermes-acp session host of version 9.9.9 serves this home: run `hermes-acp host stop`"

        async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readline()
            writer.write(encode_line({"ok": False, "version": "9.9.9", "error": refusal}))
            await writer.drain()
            writer.close()

        server = await asyncio.start_unix_server(refuse, path=paths.socket)
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "hermes_acp",
                "--shared",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=shared.env,
            )
            initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
            with anyio.fail_after(WAIT_S):
                stdout, stderr = await process.communicate(json.dumps(initialize).encode() + b"\n")
        finally:
            server.close()
            await server.wait_closed()
    assert process.returncode == 1
    answer = json.loads(stdout)
    assert answer == {"jsonrpc": "2.0", "id": 0, "error": {"code": -32603, "message": refusal}}
    assert refusal in stderr.decode()


def _terminal(call_id: str, command: str) -> dict[str, Any]:
    return {"tool_call": {"id": call_id, "name": "terminal", "arguments": {"command": command}}}


async def test_a_host_killed_mid_turn_is_replaced_and_the_session_loads_as_after_a_crash(tmp_path: Path) -> None:
    runs = tmp_path / "workspace" / "runs.txt"
    scenario = {
        "name": "killed",
        "responses": [
            {
                "match": {"last_message_contains": "count once"},
                "steps": [_terminal("call_once", "echo run >> runs.txt; echo started; sleep 2")],
            },
            {"steps": [{"text": "Noted."}], "repeat": True},
        ],
    }
    async with shared_home(tmp_path, scenario) as shared:
        host = await shared.start_host()
        async with shared.front_door() as first:
            session = (await first.conn.new_session(cwd=str(shared.workspace), mcp_servers=[])).session_id
            await first.conn.set_session_mode(session_id=session, mode_id="dont_ask")

            async def prompt() -> None:
                with contextlib.suppress(ConnectionError):  # its host is killed: the answer never comes
                    await first.prompt(session, "count once")

            async with anyio.create_task_group() as group:
                group.start_soon(prompt)
                await first.client.wait_for(
                    lambda: "started" in json.dumps(first.client.of_kind("tool_call_update")), timeout=WAIT_S
                )
                host.send_signal(signal.SIGKILL)
                with anyio.fail_after(WAIT_S):
                    await host.wait()
                with anyio.fail_after(WAIT_S):
                    await first.process.wait()  # the relay ends with its host
                group.cancel_scope.cancel()
        shared.host = None
        async with shared.front_door() as second:  # starts a new host
            await second.conn.load_session(session_id=session, cwd=str(shared.workspace), mcp_servers=[])
            card = second.client.cards(session)["call_once"]
            assert card["status"] == "failed"
            assert "outcome unknown" in json.dumps(card["content"])
            answer = await second.prompt(session, "and now?")
            assert answer.stop_reason == "end_turn"
        assert runs.read_text() == "run\n", "the interrupted command was not run again"


async def test_the_socket_directory_is_private_and_another_user_is_refused(tmp_path: Path) -> None:
    async with shared_home(tmp_path) as shared:
        await shared.start_host()
        paths = host_paths(shared.env)
        assert stat.S_IMODE(os.stat(paths.directory).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(paths.socket).st_mode) == 0o600
        if os.getuid() != 0:
            return  # connecting as another user needs root to become one
        # Open the way on purpose (as a careless chmod would), so that only the peer-uid check stands.
        for path in (shared.runtime, Path(paths.directory).parent, Path(paths.directory)):
            os.chmod(path, 0o755)
        os.chmod(paths.socket, 0o666)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child becomes nobody and tries the socket
            os.close(read_end)
            outcome = b"?"
            try:
                os.setgid(65534)
                os.setuid(65534)
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(10)
                sock.connect(paths.socket)
                try:
                    sock.sendall(encode_line({HELLO_KEY: 1, "version": "0.1.0", "env": {}}))
                    outcome = b"answered" if sock.recv(65536) else b"closed"
                except (ConnectionResetError, BrokenPipeError):
                    outcome = b"closed"  # closed with our hello unread
            except OSError as exc:
                outcome = f"error {exc}".encode()
            os.write(write_end, outcome)
            os._exit(0)
        os.close(write_end)
        with anyio.fail_after(WAIT_S):
            outcome = await anyio.to_thread.run_sync(os.read, read_end, 256)
            await anyio.to_thread.run_sync(os.waitpid, pid, 0)
        os.close(read_end)
        for path in (shared.runtime, Path(paths.directory).parent, Path(paths.directory)):
            os.chmod(path, 0o700)  # private again, or `host stop` (which checks the folder) would not reach the host
        os.chmod(paths.socket, 0o600)
        assert outcome == b"closed", "the host closed the connection of another user without a word"
        assert "refused a connection from another user" in (shared.home / "logs" / "hermes-acp.log").read_text()


def _descendants(root: int) -> set[int]:
    """Every process whose chain of parents leads to ``root``, from /proc (as acpx finds an agent's descendants)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if (parent == root or parent in found) and pid not in found:
                found.add(pid)
                grew = True
    return found


async def test_killing_the_front_door_s_whole_tree_and_group_leaves_the_host_it_started(tmp_path: Path) -> None:
    """acpx ends every descendant of the agent it spawned (and its group) when its queue owner exits: the host a
    front door started must be neither."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("reads the process tree from /proc (Linux)")
    async with shared_home(tmp_path) as shared:
        door = await anyio.open_process(
            [sys.executable, "-m", "hermes_acp", "--shared"], env=shared.env, start_new_session=True, stderr=None
        )
        async with door:
            assert door.stdin is not None and door.stdout is not None
            initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
            await door.stdin.send(json.dumps(initialize).encode() + b"\n")
            answer = b""
            with anyio.fail_after(WAIT_S):
                while b"\n" not in answer:
                    answer += await door.stdout.receive()
            assert json.loads(answer)["result"]["protocolVersion"] == 1
            code, status = await shared.status()
            assert code == 0 and status is not None
            host = status["pid"]
            tree = _descendants(door.pid)
            assert host not in tree, "the host is a descendant of the front door: killing the tree kills it"
            for pid in tree:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            os.killpg(door.pid, signal.SIGKILL)
            with anyio.fail_after(WAIT_S):
                await door.wait()
        code, after = await shared.status()
        assert code == 0 and after is not None, "the host went with the front door"
        assert after["pid"] == host
        async with shared.front_door():
            code, attached = await shared.status()
        assert attached is not None and attached["pid"] == host and attached["connections"] == 1
