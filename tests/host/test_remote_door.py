"""The remote door with the official TypeScript SDK 2.4.0's experimental clients (``tests/ts_sdk/remote_client.mjs``):
over WebSocket and over Streamable HTTP, a connection initializes, opens a session, streams a prompt, answers a
permission request, cancels a prompt; a second connection loads the session with catch-up. Without the token, or
with another one, the connection is refused before any ACP frame is handled; a bind outside loopback is refused
without ``allow_remote``. A link that drops mid-turn (``tests/fakes/remote_door.py``: no close frame, no DELETE) is
a client that left: the turn goes on and finishes, and a reconnect's ``session/load`` shows the rest once. Every
frame both ways is checked against the 2.4.0 schema."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.acp_schema import FrameLog
from tests.fakes.host_process import SharedHome, shared_home
from tests.fakes.remote_door import http_peer, ws_peer
from tests.fakes.ts_sdk import ts_sdk

pytestmark = pytest.mark.anyio

SCENARIO = {
    "name": "remote",
    "responses": [
        {"match": {"last_message_contains": "stream please"}, "steps": [{"text": "Streamed over the remote door."}]},
        {
            "match": {"last_message_contains": "permission please"},
            "steps": [{"tool_call": {"id": "call_remote", "name": "terminal", "arguments": {"command": "echo hi"}}}],
        },
        {"match": {"last_message_contains": "hi"}, "steps": [{"text": "The command ran on the host."}]},
        {"match": {"last_message_contains": "hold please"}, "hold_after_chunks": 1, "steps": [{"text": "Holding…"}]},
    ],
}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _door(port: int) -> str:
    return f'\n[host]\nlisten = ["ws://127.0.0.1:{port}"]\n'


def _token(shared: SharedHome) -> str:
    return (shared.home / "host.token").read_text().strip()


def _texts(updates: list[dict[str, Any]], kind: str = "agent_message_chunk") -> str:
    return "".join(u["update"]["content"]["text"] for u in updates if u["update"]["sessionUpdate"] == kind)


def _check(frames: list[list[Any]]) -> None:
    log = FrameLog()
    for direction, message in frames:
        log.add(direction, message)
    log.check()


@pytest.mark.parametrize("transport", ["ws", "http"])
async def test_the_ts_sdk_client_runs_a_session_through_the_remote_door(tmp_path: Path, transport: str) -> None:
    sdk = ts_sdk()
    port = _free_port()
    async with shared_home(tmp_path, SCENARIO, config_extra=_door(port)) as shared:
        await shared.start_host()
        env = {**shared.env, "TS_CLIENT_TOKEN": _token(shared), "TS_CLIENT_CWD": str(shared.workspace)}
        scheme = "ws" if transport == "ws" else "http"
        report = await sdk.run("remote_client.mjs", [transport, f"{scheme}://127.0.0.1:{port}/acp"], env=env)
    one, two = report["one"], report["two"]
    assert one["initialize"]["agentCapabilities"]["sessionCapabilities"]["status"] == {}
    assert one["streamed"]["stopReason"] == "end_turn"
    assert one["permitted"]["stopReason"] == "end_turn"
    assert one["cancelled"]["stopReason"] == "cancelled"
    assert [p["toolCall"]["toolCallId"] for p in report["permissions"]] == ["call_remote"]
    first = _texts(report["first"])
    assert first.startswith("Streamed over the remote door.The command ran on the host.")
    # The second connection's load replays the whole conversation: the prompts, the answers, the card.
    second = report["second"]
    assert _texts(second, "user_message_chunk") == "stream pleasepermission pleasehold please"
    assert _texts(second) == first
    cards = [u["update"] for u in second if u["update"]["sessionUpdate"] == "tool_call"]
    assert [c["toolCallId"] for c in cards] == ["call_remote"]
    assert two["load"] is not None
    _check(report["frames"])


@pytest.mark.parametrize("transport", ["ws", "http"])
@pytest.mark.parametrize("token", ["", "not-the-token-at-all"], ids=["without", "wrong"])
async def test_a_connection_without_the_token_is_refused_before_any_frame(
    tmp_path: Path, transport: str, token: str
) -> None:
    sdk = ts_sdk()
    port = _free_port()
    async with shared_home(tmp_path, SCENARIO, config_extra=_door(port)) as shared:
        await shared.start_host()
        env = {**shared.env, "TS_CLIENT_TOKEN": token, "TS_CLIENT_MODE": "refused"}
        scheme = "ws" if transport == "ws" else "http"
        report = await sdk.run("remote_client.mjs", [transport, f"{scheme}://127.0.0.1:{port}/acp"], env=env)
        code, status = await shared.status()
    assert report["error"], "the connection was refused"
    if transport == "http":
        assert "401" in report["error"]
    assert [direction for direction, _ in report["frames"]] == ["to_agent"], "no ACP frame came back"
    assert code == 0 and status is not None and status["connections"] == 0


async def test_a_door_outside_loopback_is_refused_without_allow_remote(tmp_path: Path) -> None:
    port = _free_port()
    extra = f'\n[host]\nlisten = ["ws://0.0.0.0:{port}"]\n'
    async with shared_home(tmp_path, config_extra=extra) as shared:
        await shared.start_host()
        code, status = await shared.status()
        assert code == 0 and status is not None
        assert status["listening"] == []
        assert "allow_remote" in status["refused"][0]
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0, "nothing listens on the refused door"
        logged = [json.loads(line) for line in (shared.home / "logs" / "hermes-acp.log").read_text().splitlines()]
        assert any(entry.get("event") == "a remote door was not opened" for entry in logged)


LONG = "".join(f"<{i:02d}>" for i in range(60))
SLOW = {
    "name": "slow",
    "responses": [
        {
            "match": {"last_message_contains": "stream slowly"},
            "chunk_size": 4,
            "chunk_delay_ms": 25,
            "steps": [{"text": LONG}],
        },
        {"match": {"last_message_contains": "and then"}, "steps": [{"text": "Next."}]},
    ],
}


@pytest.mark.parametrize("transport", ["ws", "http"])
async def test_a_link_dropped_mid_turn_leaves_the_turn_running_and_a_reconnect_s_load_shows_the_rest_once(
    tmp_path: Path, transport: str
) -> None:
    port = _free_port()
    peer = ws_peer if transport == "ws" else http_peer
    async with shared_home(tmp_path, SLOW, config_extra=_door(port)) as shared:
        await shared.start_host()
        token = _token(shared)
        here = {"cwd": str(shared.workspace), "mcpServers": []}
        async with peer(port, token) as first:
            session = (await first.request("session/new", here))["sessionId"]
            await first.watch(session)
            prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "stream slowly please"}]}
            await first.start_request("session/prompt", prompt, session=session)
            await first.wait_for(lambda: bool(first.text(session)))
            await first.drop()  # the link drops while the model streams
        assert first.text(session) != LONG, "the link dropped mid-turn"
        async with peer(port, token) as second:
            await second.watch(session)
            await second.request("session/load", {"sessionId": session, **here}, session=session)
            await second.wait_for(lambda: len(second.text(session)) >= len(LONG))
            assert second.text(session) == LONG, "the whole answer, once: the turn went on after the drop"
            following = {"sessionId": session, "prompt": [{"type": "text", "text": "and then"}]}
            answer = await second.request("session/prompt", following, session=session)  # after the first turn
            assert answer["stopReason"] == "end_turn"
        async with peer(port, token) as third:
            await third.watch(session)
            await third.request("session/load", {"sessionId": session, **here}, session=session)
            await third.wait_for(lambda: len(third.text(session)) >= len(LONG + "Next."))  # HTTP: on its own stream
            assert third.text(session) == LONG + "Next."
            assert third.text(session, "user_message_chunk") == "stream slowly pleaseand then"
        logged = (shared.home / "logs" / "hermes-acp.log").read_text()
    assert "turn failed" not in logged, "the drop did not fail the turn"
    for client in (first, second, third):
        client.frames.check()
