"""A host with a remote door, through the real process: it stays (no idle exit unless ``idle_exit_s`` says so:
nothing remote can start it again), ``hermes-acp host`` prints each door's URL and where the token is, and
``hermes-acp host token [--rotate]`` shows or replaces the token, after which the running door refuses the old one."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import anyio
import httpx
import pytest

from tests.fakes.host_process import SharedHome, shared_home

pytestmark = pytest.mark.anyio

WAIT_S = 30.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _door(port: int, extra: str = "") -> str:
    return f'\n[host]\nlisten = ["ws://127.0.0.1:{port}"]\n{extra}'


async def _status(shared: SharedHome) -> dict[str, object]:
    code, status = await shared.status()
    assert code == 0 and status is not None
    return status


@pytest.mark.parametrize(
    ("extra", "listen", "idle_exit_s"),
    [("", True, 0.0), ("idle_exit_s = 120\n", True, 120.0), ("", False, 900.0), ("idle_exit_s = 0\n", False, 0.0)],
    ids=["door-unset", "door-set", "local-unset", "local-never"],
)
async def test_the_idle_exit_in_effect_is_never_for_a_host_with_a_door_unless_set(
    tmp_path: Path, extra: str, listen: bool, idle_exit_s: float
) -> None:
    config = _door(_free_port(), extra) if listen else f"\n[host]\n{extra}"
    async with shared_home(tmp_path, config_extra=config) as shared:
        await shared.start_host()
        status = await _status(shared)
    assert status["idle_exit_s"] == idle_exit_s


async def test_the_host_prints_each_door_s_url_and_the_token_file(tmp_path: Path) -> None:
    port = _free_port()
    async with shared_home(tmp_path, config_extra=_door(port)) as shared:
        host = await shared.start_host()
        assert host.stdout is not None
        lines: list[str] = []
        with anyio.fail_after(WAIT_S):
            while not lines or not lines[-1].startswith("exits when idle"):
                lines.append((await host.stdout.readline()).decode().strip())
    token_file = shared.home / "host.token"
    assert f"remote door: ws://127.0.0.1:{port}/acp" in lines
    assert any(str(token_file) in line for line in lines), lines
    assert lines[-1] == "exits when idle: never"
    assert token_file.exists()


async def _initialize(port: int, token: str) -> int:
    """The remote door's answer to an HTTP ``initialize`` with ``token``: its status (a connection it opened is
    ended again)."""
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    url = f"http://127.0.0.1:{port}/acp"
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    with anyio.fail_after(WAIT_S):
        async with httpx.AsyncClient() as client:
            answer = await client.post(url, json=initialize, headers=headers)
            if answer.status_code == 200:
                assert answer.json()["result"]["protocolVersion"] == 1
                ended = await client.delete(
                    url, headers={**headers, "Acp-Connection-Id": answer.headers["acp-connection-id"]}
                )
                assert ended.status_code == 202
    return answer.status_code


async def test_host_token_shows_the_token_and_rotate_makes_the_running_door_refuse_the_old_one(tmp_path: Path) -> None:
    port = _free_port()
    async with shared_home(tmp_path, config_extra=_door(port)) as shared:
        token_file = shared.home / "host.token"
        shown = await shared.command("host", "token")
        assert shown.returncode == 0, shown.stderr
        old = shown.stdout.decode().strip()
        assert old == token_file.read_text().strip()
        assert str(token_file) in shown.stderr.decode()
        await shared.start_host()
        assert await _initialize(port, old) == 200
        rotated = await shared.command("host", "token", "--rotate")
        assert rotated.returncode == 0, rotated.stderr
        new = rotated.stdout.decode().strip()
        assert new != old and len(new) >= 32
        assert token_file.read_text().strip() == new
        assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
        assert "now takes only the new one" in rotated.stderr.decode()
        assert await _initialize(port, old) == 401
        assert await _initialize(port, new) == 200
        status = await _status(shared)
        assert status["listening"] == [f"ws://127.0.0.1:{port}"]
        assert not list(token_file.parent.glob("host.token.*")), "no temporary file left beside the token"


async def test_host_token_rotate_with_no_host_running_replaces_the_file(tmp_path: Path) -> None:
    async with shared_home(tmp_path) as shared:
        rotated = await shared.command("host", "token", "--rotate")
        assert rotated.returncode == 0, rotated.stderr
        token_file = shared.home / "host.token"
        assert token_file.read_text().strip() == rotated.stdout.decode().strip()
        assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
        assert "no host runs" in rotated.stderr.decode()
        shown = await shared.command("host", "token")
        assert shown.stdout.decode().strip() == rotated.stdout.decode().strip()
