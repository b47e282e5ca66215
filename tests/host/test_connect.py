"""``hermes-acp --connect URL``: an editor's stdio carried to a session host's remote door, through the real
processes (the host with a door, the relay, the acp SDK's client on the relay's stdio).

A session and a streamed prompt through the relay; the link killed mid-turn (a proxy in front of the door drops it
while a command of the turn blocks): the turn goes on at the host, the relay makes the link again, rejoins after
the last cursor it passed on and sends the prompt again under its operation id, so the editor gets the rest of the
turn once (no update twice, cursors never going back) and the prompt's answer when the turn ends; a question the
host asked on the dropped link is withdrawn and asked again on the new one; TLS through a terminator with a
self-signed certificate (refused without ``--cacert``, taken with it); a wrong token and a host that cannot be
reached: a clear error on stderr and an ACP error to the editor, never a hang. Every frame is checked against the
ACP schema. The session, the drop and the unreachable host run with the relay reading the editor by ``select`` and
by the threads Windows needs (``HERMES_ACP_PORTABLE=stdio``), and the relay says which it uses."""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes.acp_client import PermissionCall, RecordingClient
from tests.fakes.host_process import FrontDoor, SharedHome, shared_home
from tests.fakes.tcp_proxy import self_signed, tcp_proxy

pytestmark = pytest.mark.anyio

WAIT_S = 60.0
GATED = "read _ < gate; echo after the drop"
SCENARIO = {
    "name": "connect",
    "responses": [
        {"match": {"last_message_contains": "stream please"}, "steps": [{"text": "Streamed through the relay."}]},
        {
            "match": {"last_message_contains": "gated please"},
            "steps": [{"tool_call": {"id": "call_gate", "name": "terminal", "arguments": {"command": GATED}}}],
        },
        {"match": {"last_message_contains": "after the drop"}, "steps": [{"text": "Finished at the host."}]},
        {
            "match": {"last_message_contains": "ask please"},
            "steps": [{"tool_call": {"id": "call_ask", "name": "terminal", "arguments": {"command": "echo asked"}}}],
        },
        {"match": {"last_message_contains": "asked"}, "steps": [{"text": "Answered on the new link."}]},
    ],
}


RELAYS = {"select": "", "threads": "stdio"}
"""How the relay reads the editor → ``HERMES_ACP_PORTABLE`` for the relay's process."""


def _relay_env(relay: str) -> dict[str, str]:
    return {"HERMES_ACP_PORTABLE": RELAYS[relay]}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@asynccontextmanager
async def _host(tmp_path: Path) -> AsyncIterator[tuple[SharedHome, int]]:
    port = _free_port()
    door = f'\n[host]\nlisten = ["ws://127.0.0.1:{port}"]\nallowed_hosts = ["127.0.0.1"]\n'  # behind the proxy too
    async with shared_home(tmp_path, SCENARIO, config_extra=door) as home:
        await home.start_host()
        yield home, port


def _connect(url: str, home: SharedHome, *extra: str) -> tuple[str, ...]:
    return ("--connect", url, "--token-file", str(home.home / "host.token"), *extra)


def _cursors(door: FrontDoor) -> list[int]:
    """The seq of every delivery cursor the editor was given, in order."""
    seqs = []
    for direction, message in door.frames.frames:
        params = message.get("params") if direction == "to_client" else None
        cursor = params.get("_meta", {}).get("hermes", {}).get("cursor") if isinstance(params, dict) else None
        if isinstance(cursor, str):
            seqs.append(int(cursor.split(".")[1]))
    return seqs


def _running(client: RecordingClient, call_id: str) -> bool:
    return any(u.get("status") == "in_progress" for u in client.tool_frames(call_id))


async def _wait(client: RecordingClient, predicate: Any) -> None:
    with anyio.fail_after(WAIT_S):
        while not predicate():
            await client.arrived.wait()


@pytest.mark.parametrize("relay", RELAYS)
async def test_a_session_runs_through_the_relay(tmp_path: Path, relay: str) -> None:
    async with _host(tmp_path) as (home, port):
        url = f"ws://127.0.0.1:{port}/acp"
        async with home.front_door(args=_connect(url, home), env=_relay_env(relay)) as door:
            session_id = (await door.conn.new_session(cwd=str(home.workspace), mcp_servers=[])).session_id
            answer = await door.prompt(session_id, "stream please")
            assert answer.stop_reason == "end_turn"
            assert door.client.text(session_id) == "Streamed through the relay."
            initialize = json.loads(door.stdout_lines[0])["result"]
            assert initialize["_meta"]["hermes"]["remote"]["serverEpoch"], "the host's answer, as it sent it"
            receipts = [
                m["result"]["_meta"]["hermes"]["operationReceipt"]
                for m in map(json.loads, door.stdout_lines)
                if "result" in m and "operationReceipt" in m["result"].get("_meta", {}).get("hermes", {})
            ]
            assert len(receipts) == 2, "session/new and the prompt went with the relay's operation ids"
        seqs = _cursors(door)
        assert seqs and seqs == sorted(seqs), "every update carries where the editor's view stands"
        stderr = (home.home / "front-door-stderr.log").read_text()
        assert f"hermes-acp: connected to {url} (the editor's stdio: {relay})" in stderr


@pytest.mark.parametrize("relay", RELAYS)
async def test_a_link_killed_mid_turn_the_turn_goes_on_and_the_reconnect_delivers_the_rest_once(
    tmp_path: Path, relay: str
) -> None:
    async with _host(tmp_path) as (home, port), tcp_proxy(port) as proxy:
        (home.workspace / "gate").unlink(missing_ok=True)
        os.mkfifo(home.workspace / "gate")
        client = RecordingClient(answers=["allow_once"])
        args = _connect(f"ws://127.0.0.1:{proxy.port}/acp", home)
        async with home.front_door(client, args=args, env=_relay_env(relay)) as door:
            session_id = (await door.conn.new_session(cwd=str(home.workspace), mcp_servers=[])).session_id
            async with anyio.create_task_group() as group:
                answers: list[Any] = []

                async def prompt() -> None:
                    answers.append(await door.prompt(session_id, "gated please", timeout=WAIT_S))

                group.start_soon(prompt)
                await _wait(client, lambda: _running(client, "call_gate"))
                links = proxy.links
                proxy.cut()  # the command blocks on the gate: the turn is mid-way at the host
                with anyio.fail_after(WAIT_S):
                    while proxy.links == links:
                        await proxy.linked.wait()  # the relay made the link again
                with anyio.fail_after(WAIT_S):  # opens once the command has the gate open to read
                    await anyio.to_thread.run_sync(_open_gate, home.workspace / "gate", abandon_on_cancel=True)
            assert answers[0].stop_reason == "end_turn", "the prompt sent before the drop got its turn's end"
            assert client.text(session_id).count("Finished at the host.") == 1
            [card] = [c for c in client.cards(session_id).values() if c.get("toolCallId") == "call_gate"]
            assert card["status"] == "completed"
            seqs = _cursors(door)
            assert seqs == sorted(seqs), "nothing delivered twice: the cursors never go back"
            assert len(home.model.requests()) == 2, "the prompt ran once (one turn: the call, then the answer)"
        stderr = (home.home / "front-door-stderr.log").read_text()
        assert "connecting again" in stderr and f"(the editor's stdio: {relay})" in stderr


async def test_a_question_asked_on_the_dropped_link_is_asked_again_on_the_new_one(tmp_path: Path) -> None:
    held = anyio.Event()
    first_ask = anyio.Event()

    async def hold_the_first(call: PermissionCall) -> str:
        if not first_ask.is_set():
            first_ask.set()
            await held.wait()  # never answered on the old link
        return "allow_once"

    async with _host(tmp_path) as (home, port), tcp_proxy(port) as proxy:
        client = RecordingClient(on_permission=hold_the_first)
        async with home.front_door(client, args=_connect(f"ws://127.0.0.1:{proxy.port}/acp", home)) as door:
            session_id = (await door.conn.new_session(cwd=str(home.workspace), mcp_servers=[])).session_id
            async with anyio.create_task_group() as group:
                answers: list[Any] = []

                async def prompt() -> None:
                    answers.append(await door.prompt(session_id, "ask please", timeout=WAIT_S))

                group.start_soon(prompt)
                with anyio.fail_after(WAIT_S):
                    await first_ask.wait()
                proxy.cut()
                await _wait(client, lambda: len(client.permissions) == 2)
                held.set()
            assert answers[0].stop_reason == "end_turn"
            assert client.text(session_id).count("Answered on the new link.") == 1
            withdrawn = [m for d, m in door.frames.frames if d == "to_client" and m.get("method") == "$/cancel_request"]
            assert len(withdrawn) == 1, "the question of the dropped link was withdrawn"


async def test_tls_with_a_self_signed_certificate_needs_its_cacert(tmp_path: Path) -> None:
    cert_file, _, context = self_signed(tmp_path)
    async with _host(tmp_path) as (home, port), tcp_proxy(port, tls=context) as terminator:
        url = f"wss://127.0.0.1:{terminator.port}/acp"
        refused = await _refused(home, _connect(url, home))
        assert "certificate" in refused["stderr"] and "--cacert" in refused["stderr"]
        assert refused["answer"]["error"]["code"] == -32603 and "certificate" in refused["answer"]["error"]["message"]
        async with home.front_door(args=_connect(url, home, "--cacert", str(cert_file))) as door:
            session_id = (await door.conn.new_session(cwd=str(home.workspace), mcp_servers=[])).session_id
            assert (await door.prompt(session_id, "stream please")).stop_reason == "end_turn"


async def test_a_wrong_token_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    async with _host(tmp_path) as (home, port):
        wrong = tmp_path / "wrong.token"
        wrong.write_text("not-the-token-of-this-host\n")
        refused = await _refused(home, ("--connect", f"ws://127.0.0.1:{port}/acp", "--token-file", str(wrong)))
    assert "refused the connection: the token is not the host's" in refused["stderr"]
    assert "the token is not the host's" in refused["answer"]["error"]["message"]


@pytest.mark.parametrize("relay", RELAYS)
async def test_a_host_that_cannot_be_reached_is_a_clear_error_not_a_hang(tmp_path: Path, relay: str) -> None:
    async with shared_home(tmp_path, SCENARIO) as home:
        home.home.joinpath("host.token").write_text("some-token-some-token\n")
        home.env.update(_relay_env(relay))
        refused = await _refused(home, _connect(f"ws://127.0.0.1:{_free_port()}/acp", home))
    assert "cannot reach 127.0.0.1" in refused["stderr"]
    assert refused["answer"]["error"]["code"] == -32603
    assert refused["code"] == 1


def _open_gate(path: Path) -> None:
    with path.open("w") as gate:
        gate.write("go\n")


async def _refused(home: SharedHome, args: tuple[str, ...]) -> dict[str, Any]:
    """The relay's answer to an ``initialize`` when it cannot connect: its stderr, exit status and the answer."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    with anyio.fail_after(30):
        done = await anyio.run_process(
            [sys.executable, "-m", "hermes_acp", *args],
            input=json.dumps(request).encode() + b"\n",
            env=home.env,
            check=False,
        )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, done.stdout
    return {"stderr": done.stderr.decode(), "code": done.returncode, "answer": json.loads(lines[0])}
