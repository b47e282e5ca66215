"""What the remote door lets in, through the real host process: a body past ``[host] max_body_bytes`` is refused
``413`` by its ``Content-Length`` before any of it is sent, and cut as it streams (200 MB from a generator: the host's
peak RSS grows by far less than the body); a WebSocket message past the bound closes the connection with ``1009``,
from the frame's header alone; a request whose ``Origin`` is not in ``[host] allowed_origins``, or whose ``Host``
names neither the door nor ``[host] allowed_hosts``, is refused ``403`` (an upgrade too) before any ACP frame, and
an allowed origin and a listed host are admitted."""

from __future__ import annotations

import itertools
import json
import socket
import struct
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from websockets.exceptions import InvalidStatus

from probes.http_upload import head_only, post_streaming
from tests.fakes.host_process import SharedHome, shared_home
from tests.fakes.remote_door import ws_peer

pytestmark = pytest.mark.anyio

WAIT_S = 30.0
MIB = 1024 * 1024
DEFAULT_LIMIT = 16 * MIB


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _door(port: int, extra: str = "") -> str:
    return f'\n[host]\nlisten = ["ws://127.0.0.1:{port}"]\n{extra}'


def _token(shared: SharedHome) -> str:
    return (shared.home / "host.token").read_text().strip()


def _peak_kib(shared: SharedHome) -> int:
    """The host's peak resident memory so far (VmHWM)."""
    record = shared.record()
    assert record is not None
    status = Path(f"/proc/{record['pid']}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))


async def _connections(shared: SharedHome) -> int:
    code, status = await shared.status()
    assert code == 0 and status is not None
    return int(status["connections"])


async def test_a_200_mb_body_is_cut_as_it_streams_and_the_host_s_memory_stays_bounded(tmp_path: Path) -> None:
    port = _free_port()
    async with shared_home(tmp_path, config_extra=_door(port)) as shared:
        await shared.start_host()
        before = _peak_kib(shared)
        chunk = b" " * MIB  # one chunk, sent 200 times: the test holds 1 MiB
        status, body, sent = await post_streaming(port, _token(shared), itertools.repeat(chunk, 200))
        grew = (_peak_kib(shared) - before) * 1024
        assert status == 413
        assert grew < 64 * MIB, f"the host's peak RSS grew by {grew / MIB:.0f} MiB for a 200 MB body"
        assert sent < 200 * MIB, "the host stopped reading: the client stopped sending when the answer came"
        assert f"max_body_bytes ({DEFAULT_LIMIT} bytes)" in body
        assert await _connections(shared) == 0


async def test_a_content_length_past_the_limit_is_refused_before_any_body_byte(tmp_path: Path) -> None:
    port = _free_port()
    async with shared_home(tmp_path, config_extra=_door(port)) as shared:
        await shared.start_host()
        token = _token(shared)
        status, body = await head_only(port, token, DEFAULT_LIMIT + 1)  # no byte of the body is ever sent
        assert status == 413
        assert f"max_body_bytes ({DEFAULT_LIMIT} bytes)" in body
        async with httpx.AsyncClient() as client:
            exact = await client.post(
                f"http://127.0.0.1:{port}/acp",
                content=b" " * DEFAULT_LIMIT,
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            )
        assert exact.status_code == 400, "a body of exactly the bound is read (and found not to be JSON)"


def _frame_header(length: int) -> bytes:
    """A client's text frame header (FIN, masked) announcing ``length`` bytes of payload."""
    return bytes([0x81, 0x80 | 127]) + struct.pack("!Q", length) + b"\x00\x00\x00\x00"


async def test_a_websocket_frame_past_the_limit_closes_1009_from_its_header_alone(tmp_path: Path) -> None:
    port = _free_port()
    async with shared_home(tmp_path, config_extra=_door(port)) as shared:
        await shared.start_host()
        async with ws_peer(port, _token(shared)) as peer:
            await peer.send_raw(_frame_header(DEFAULT_LIMIT + 1))  # and not one byte of its payload
            with anyio.fail_after(WAIT_S):
                await peer.ended.wait()
            assert peer.close_code == 1009


async def test_a_websocket_message_past_a_configured_limit_closes_1009_and_one_at_it_is_served(
    tmp_path: Path,
) -> None:
    port = _free_port()
    async with shared_home(tmp_path, config_extra=_door(port, "max_body_bytes = 65536\n")) as shared:
        await shared.start_host()
        async with ws_peer(port, _token(shared)) as peer:
            request = {"jsonrpc": "2.0", "id": "at-the-bound", "method": "session/list", "params": {}}
            text = json.dumps(request)
            await peer.send_text(text + " " * (65536 - len(text)))
            await peer.wait_for(lambda: "at-the-bound" in peer.answers)
            assert "result" in peer.answers["at-the-bound"]
            await peer.send_text(text + " " * (65537 - len(text)))
            with anyio.fail_after(WAIT_S):
                await peer.ended.wait()
            assert peer.close_code == 1009


ALLOWED = 'allowed_origins = ["https://app.example"]\nallowed_hosts = ["acp.example.test"]\n'


async def _ws_refusal(port: int, token: str, *, host: str = "127.0.0.1", origin: str | None = None) -> Any:
    headers = {"Origin": origin} if origin else {}
    with pytest.raises(InvalidStatus) as refused:
        async with ws_peer(port, token, host=host, headers=headers):
            pass
    return refused.value.response


async def _http_answer(port: int, token: str, headers: dict[str, str]) -> httpx.Response:
    frame = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    async with httpx.AsyncClient() as client:
        return await client.post(
            f"http://127.0.0.1:{port}/acp", json=frame, headers={"Authorization": f"Bearer {token}", **headers}
        )


@pytest.mark.parametrize("transport", ["ws", "http"])
@pytest.mark.parametrize("foreign", ["origin", "host"])
async def test_a_foreign_origin_or_host_is_refused_403_before_any_frame(
    tmp_path: Path, transport: str, foreign: str
) -> None:
    port = _free_port()
    async with shared_home(tmp_path, config_extra=_door(port)) as shared:  # no origin nor other host allowed
        await shared.start_host()
        token = _token(shared)
        origin = "http://evil.example" if foreign == "origin" else None
        host = "evil.example" if foreign == "host" else "127.0.0.1"
        if transport == "ws":
            response = await _ws_refusal(port, token, host=host, origin=origin)
            status, body = response.status_code, response.body.decode()
        else:
            headers = {"Origin": origin} if origin else {"Host": f"{host}:{port}"}
            answer = await _http_answer(port, token, headers)
            status, body = answer.status_code, answer.text
        assert status == 403
        assert ("allowed_origins" if foreign == "origin" else "allowed_hosts") in body
        assert await _connections(shared) == 0, "no connection was opened: no ACP frame was read"


@pytest.mark.parametrize("transport", ["ws", "http"])
async def test_an_allowed_origin_and_a_listed_host_are_admitted(tmp_path: Path, transport: str) -> None:
    port = _free_port()
    async with shared_home(tmp_path, config_extra=_door(port, ALLOWED)) as shared:
        await shared.start_host()
        token = _token(shared)
        admitted = [("127.0.0.1", "https://app.example"), ("acp.example.test", None), ("localhost", None)]
        for host, origin in admitted:
            if transport == "ws":
                async with ws_peer(port, token, host=host, headers={"Origin": origin} if origin else {}) as peer:
                    assert peer.answers[1]["result"]["protocolVersion"] == 1
            else:
                headers = {"Host": f"{host}:{port}", **({"Origin": origin} if origin else {})}
                answer = await _http_answer(port, token, headers)
                assert answer.status_code == 200, (host, origin, answer.text)
                assert answer.json()["result"]["protocolVersion"] == 1
