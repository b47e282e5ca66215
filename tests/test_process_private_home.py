"""The home's files are private (docs/architecture.md §1.1, the table of files and modes), through the real process
under the usual umask 022: a fresh home's store with its -wal and -shm, logs (the server's and an MCP server's), the
image cache and a config.toml written by the in-editor setup are ``0600`` in folders ``0700``; a home left
readable by others is made private when the server starts, and ``--check`` says what it changed."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from fixtures.mcp_server import stdio_spec
from tests.fakes.acp_client import PermissionCall, RecordingClient
from tests.fakes.agent_process import spawn_agent

pytestmark = pytest.mark.anyio

SNAPSHOT: dict[str, Any] = {
    "name": "snapshot-then-setup",
    "models": ["m"],
    "responses": [
        {
            "match": {"last_message_contains": "take a snapshot"},
            "steps": [{"tool_call": {"id": "c1", "name": "mcp__fixture__snapshot", "arguments": {"colour": "blue"}}}],
        },
        {"repeat": True, "steps": [{"text": "Done."}]},
    ],
}


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The umask most systems give a user: files 0644 and folders 0755 unless the server says otherwise."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


async def _allow(call: PermissionCall) -> str:
    return "allow_once"


async def test_a_fresh_home_is_private_whatever_the_umask(tmp_path: Path, umask_022: None) -> None:
    home = tmp_path / "home"
    client = RecordingClient(on_permission=_allow)
    async with spawn_agent(tmp_path, SNAPSHOT, home=home, client=client, initialize=False) as agent:
        capabilities = acp.schema.ClientCapabilities.model_validate({"elicitation": {"form": {}}})
        with anyio.fail_after(30):
            await agent.conn.initialize(protocol_version=1, client_capabilities=capabilities)
        session_id = await agent.new_session([stdio_spec(tools=["snapshot"])])
        await agent.prompt(session_id, "take a snapshot")
        client.elicitation_answers += [
            {"action": "accept", "content": {"preset": "ollama", "base_url": agent.model.openai_base_url}},
            {"action": "accept", "content": {"model": "m", "vision": False}},
        ]
        assert await agent.request("authenticate", {"methodId": "hermes-setup-form"}, timeout=60) == {}
        (image,) = (home / "cache" / "images").glob("mcp-*")
        (mcp_log,) = (home / "logs" / "mcp").glob("*.log")
        files = [home / "state.db", home / "state.db-wal", home / "state.db-shm", home / "logs" / "hermes-acp.log"]
        files += [mcp_log, image, home / "config.toml", home / "config.toml.bak"]
        folders = [home, home / "logs", home / "logs" / "mcp", home / "cache", home / "cache" / "images"]
        modes = {str(p.relative_to(home)): _mode(p) for p in files + folders}
    assert modes == {str(p.relative_to(home)): 0o600 for p in files} | {
        str(p.relative_to(home)): 0o700 for p in folders
    }


def _loosen(home: Path) -> list[Path]:
    """A home as an older version (or a permissive umask) left it: readable by everyone."""
    (home / "logs" / "mcp").mkdir(parents=True)
    (home / "logs" / "hermes-acp.log").write_text("{}\n")
    (home / "logs" / "mcp" / "fixture.log").write_text("")
    (home / "cache" / "images").mkdir(parents=True)
    (home / "cache" / "images" / "computer_use_old.png").write_bytes(b"a screenshot")
    (home / "state.db").write_bytes(b"")
    loose = [home, home / "logs", home / "logs" / "mcp", home / "cache", home / "cache" / "images"]
    loose += [home / "config.toml", home / "state.db", home / "logs" / "hermes-acp.log"]
    loose += [home / "logs" / "mcp" / "fixture.log", home / "cache" / "images" / "computer_use_old.png"]
    for path in loose:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return loose


async def test_a_home_others_can_read_is_made_private_at_start_and_check_says_so(
    tmp_path: Path, umask_022: None
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("")
    loose = _loosen(home)
    async with spawn_agent(tmp_path, home=home) as agent:
        await agent.new_session()
        at_start = {str(p.relative_to(home)): _mode(p) for p in loose}
    assert at_start == {str(p.relative_to(home)): 0o700 if p.is_dir() else 0o600 for p in loose}
    assert "made the home private" in (home / "logs" / "hermes-acp.log").read_text()

    other = tmp_path / "other-home"
    other.mkdir()
    (other / "config.toml").write_text("")
    _loosen(other)
    env = {**os.environ, "HERMES_ACP_HOME": str(other), "HERMES_CUA_DRIVER_CMD": "no-such-driver"}
    check = await anyio.run_process([sys.executable, "-m", "hermes_acp", "--check"], env=env, check=False)
    report = check.stdout.decode()
    assert "others could read parts of the home; made private" in report, report
    assert "state.db (644 → 600)" in report and "logs (755 → 700)" in report and "the home itself (755 → 700)" in report
    assert _mode(other / "cache" / "images" / "computer_use_old.png") == 0o600
    again = await anyio.run_process([sys.executable, "-m", "hermes_acp", "--check"], env=env, check=False)
    assert "made private" not in again.stdout.decode(), "nothing left to say"
