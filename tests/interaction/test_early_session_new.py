"""The front door answers ``session/new`` while the SDK and the rest of the server are still loading, with the same
response as the SDK path; the session (and its MCP servers) is opened once the server is up, and requests that had
to wait are answered after that, in order. The load is held with an event so the test decides when it ends."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.model_server import serve_model_server
from hermes_acp.app import load_server, run_connection
from hermes_acp.protocol.stdio import FrontDoor, serve_streams
from hermes_acp.sessions.manager import SessionManager
from hermes_acp.storage.sqlite import SqliteSessionStore
from hermes_acp.telemetry import configure_logging
from tests.fakes.server import RawPair, socket_streams

pytestmark = pytest.mark.anyio
GOLDEN = Path(__file__).parent.parent / "golden"
REPO = Path(__file__).resolve().parent.parent.parent


@contextlib.asynccontextmanager
async def held_server(tmp_path: Path, config: str) -> AsyncIterator[tuple[RawPair, threading.Event]]:
    """The production ``run_connection`` over a socketpair, with the heavy load held until ``release`` is set."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(config)
    release = threading.Event()

    def held_load() -> None:
        if not release.wait(timeout=30):
            raise TimeoutError("the test never released the server load")
        load_server()

    env = {"HERMES_ACP_HOME": str(home), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    try:
        async with socket_streams() as (agent_reader, agent_writer, client_reader, client_writer):
            async with anyio.create_task_group() as tg:
                runner = partial(run_connection, load=held_load)
                tg.start_soon(serve_streams, agent_reader, agent_writer, lambda: runner, env)
                try:
                    yield RawPair(client_reader, client_writer), release
                finally:
                    release.set()
                    client_writer.close()
                    agent_writer.close()
                    tg.cancel_scope.cancel()
    finally:
        configure_logging(None, "warning")  # the server logged to a file under ``home``; close it


def _request(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


async def test_session_new_is_answered_before_the_server_has_loaded(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with held_server(tmp_path, "") as (raw, release):
        await raw.send(_request(1, "initialize", {"protocolVersion": 1}))
        await raw.response(1)
        await raw.send(_request(2, "session/new", {"cwd": str(workspace), "mcpServers": []}))
        response = await raw.response(2)
        commands = await raw.receive()
        assert not release.is_set(), "answered while the load was still held"
        await raw.send(_request(3, "session/list", {}))
        release.set()
        listed = await raw.response(3, timeout=30)
    result = response["result"]
    session_id = result.pop("sessionId")
    golden = json.loads((GOLDEN / "session_new.json").read_text())
    golden.pop("sessionId")
    for key in ("configOptions", "models"):
        golden.pop(key, None)
        result.pop(key, None)
    assert result == golden, "same modes as the SDK path (no model configured here, so no model option)"
    assert commands["method"] == "session/update"
    assert commands["params"]["update"]["sessionUpdate"] == "available_commands_update"
    assert [s["sessionId"] for s in listed["result"]["sessions"]] == [session_id]


async def test_invalid_params_wait_for_the_sdk_path_and_its_usual_errors(tmp_path: Path) -> None:
    async with held_server(tmp_path, "") as (raw, release):
        await raw.send(_request(1, "initialize", {"protocolVersion": 1}))
        await raw.response(1)
        await raw.send(_request(2, "session/new", {"cwd": "relative/dir", "mcpServers": []}))
        release.set()
        error = await raw.response(2, timeout=30)
        await raw.send(_request(3, "session/list", {}))
        listed = await raw.response(3, timeout=30)
    assert error["error"]["code"] == -32602
    assert "cwd" in error["error"]["message"]
    assert listed["result"]["sessions"] == [], "a refused session/new leaves nothing behind"


@pytest.mark.parametrize(("where", "field"), [("cwd", "cwd"), ("additionalDirectories", "additionalDirectories[0]")])
async def test_a_nul_byte_in_a_path_is_invalid_params_during_the_load_and_after_it(
    tmp_path: Path, where: str, field: str
) -> None:
    bad = str(tmp_path / "a\x00b")
    params = (
        {"cwd": bad, "mcpServers": []}
        if where == "cwd"
        else {"cwd": str(tmp_path), "mcpServers": [], "additionalDirectories": [bad]}
    )
    async with held_server(tmp_path, "") as (raw, release):
        await raw.send(_request(1, "initialize", {"protocolVersion": 1}))
        await raw.response(1)
        await raw.send(_request(2, "session/new", params))
        release.set()
        during = await raw.response(2, timeout=30)
        await raw.send(_request(3, "session/new", params))
        after = await raw.response(3, timeout=30)
        await raw.send(_request(4, "session/list", {}))
        listed = await raw.response(4, timeout=30)
    for error in (during["error"], after["error"]):
        assert error["code"] == -32602
        assert error["data"]["field"] == field
        assert "NUL" in error["message"]
    assert listed["result"]["sessions"] == [], "the server kept serving and created nothing"


async def test_an_unreadable_mcp_entry_waits_for_the_sdk_path_and_the_session_names_it(tmp_path: Path) -> None:
    odd = {"name": "half", "command": "true"}  # no args/env: the SDK skips entries it cannot read
    scenario = {"name": "odd", "responses": [{"repeat": True, "steps": [{"text": "Ready."}]}]}
    async with serve_model_server(scenario) as model:
        config = f'[providers.fx]\nkind = "openai"\nbase_url = "{model.openai_base_url}"\nmodels = ["m"]\n'
        async with held_server(tmp_path, config) as (raw, release):
            await raw.send(_request(1, "initialize", {"protocolVersion": 1}))
            await raw.response(1)
            await raw.send(_request(2, "session/new", {"cwd": str(tmp_path), "mcpServers": [odd]}))
            await raw.send(_request(3, "session/new", {"cwd": str(tmp_path), "mcpServers": []}))
            first = await raw.receive()
            assert first.get("id") == 3, f"a plain session/new is answered early, the odd one waits: {first}"
            release.set()
            session_id = (await raw.response(2, timeout=30))["result"]["sessionId"]
            prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hello"}]}
            await raw.send(_request(4, "session/prompt", prompt))
            texts = await _texts_until_response(raw, 4)
    assert "⚠ MCP server 'half' was not started: its entry cannot be read ('args' must be a list of strings)." in texts


async def _texts_until_response(raw: RawPair, request_id: int) -> list[str]:
    texts: list[str] = []
    while True:
        message = await raw.receive(timeout=30)
        if message.get("id") == request_id:
            assert message["result"]["stopReason"] == "end_turn"
            return texts
        update = message.get("params", {}).get("update", {})
        if update.get("sessionUpdate") == "agent_message_chunk":
            texts.append(update["content"]["text"])


async def test_an_early_session_is_opened_with_its_mcp_servers_and_answers_prompts(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    scenario = {"name": "early", "responses": [{"repeat": True, "steps": [{"text": "Ready."}]}]}
    server = {
        "name": "fixture",
        "command": sys.executable,
        "args": ["-m", "fixtures.mcp_server", "--journal", str(tmp_path / "mcp.jsonl")],
        "env": [{"name": "PYTHONPATH", "value": str(REPO)}],
    }
    async with serve_model_server(scenario) as model:
        config = f'[providers.fx]\nkind = "openai"\nbase_url = "{model.openai_base_url}"\nmodels = ["m"]\n'
        async with held_server(tmp_path, config) as (raw, release):
            await raw.send(_request(1, "initialize", {"protocolVersion": 1}))
            await raw.response(1)
            await raw.send(_request(2, "session/new", {"cwd": str(workspace), "mcpServers": [server]}))
            session_id = (await raw.response(2))["result"]["sessionId"]
            assert not release.is_set()
            prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hello"}]}
            await raw.send(_request(3, "session/prompt", prompt))
            release.set()
            answer = await raw.response(3, timeout=60)
        offered = [t["function"]["name"] for t in model.requests()[0].body.get("tools", [])]
    assert answer["result"]["stopReason"] == "end_turn"
    assert "mcp__fixture__echo" in offered


async def test_an_early_session_that_cannot_be_opened_says_why_and_session_load_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_existing = SessionManager.open_existing
    failures = ["the disk is having a bad day"]

    async def failing_once(self: SessionManager, *args: Any, **kwargs: Any) -> Any:
        if failures:
            raise RuntimeError(failures.pop())
        return await open_existing(self, *args, **kwargs)

    monkeypatch.setattr(SessionManager, "open_existing", failing_once)
    async with held_server(tmp_path, "") as (raw, release):
        await raw.send(_request(1, "initialize", {"protocolVersion": 1}))
        await raw.response(1)
        await raw.send(_request(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        session_id = (await raw.response(2))["result"]["sessionId"]
        release.set()
        await raw.send(_request(3, "session/set_mode", {"sessionId": session_id, "modeId": "read_only"}))
        refused = await raw.response(3, timeout=30)
        await raw.send(_request(4, "session/list", {}))
        listed = await raw.response(4)
        load = {"sessionId": session_id, "cwd": str(tmp_path), "mcpServers": []}
        await raw.send(_request(5, "session/load", load))
        loaded = await raw.response(5)
        await raw.send(_request(6, "session/set_mode", {"sessionId": session_id, "modeId": "read_only"}))
        accepted = await raw.response(6)
    message = refused["error"]["message"]
    assert "created at start-up but could not be opened: the disk is having a bad day" in message
    assert "session/load retries" in message
    assert [s["sessionId"] for s in listed["result"]["sessions"]] == [session_id]
    assert "result" in loaded, loaded
    assert accepted["result"] == {}


async def test_a_failed_load_closes_the_early_path_and_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    closed: list[SqliteSessionStore] = []
    aclose = SqliteSessionStore.aclose

    async def recording_aclose(self: SqliteSessionStore) -> None:
        closed.append(self)
        await aclose(self)

    monkeypatch.setattr(SqliteSessionStore, "aclose", recording_aclose)
    release = threading.Event()

    def failing_load() -> None:
        if release.wait(timeout=30):
            raise RuntimeError("the server could not load")

    agent_sock, client_sock = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=agent_sock)
    client_reader, client_writer = await asyncio.open_connection(sock=client_sock)
    raw = RawPair(client_reader, client_writer)
    env = {"HERMES_ACP_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    door = FrontDoor(agent_reader, agent_writer, env)
    pump = asyncio.create_task(door.pump())
    served = asyncio.create_task(run_connection(door, env, load=failing_load))
    try:
        await raw.send(_request(1, "session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        assert "sessionId" in (await raw.response(1))["result"], "answered early while the load ran"
        release.set()
        with anyio.fail_after(30), pytest.raises(RuntimeError, match="could not load"):
            await served
        assert len(closed) == 1, "the store run_connection opened was closed"
        assert await door.close_early() is None, "no more early answers once the load failed"
    finally:
        release.set()
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pump
        await door.close()
        client_writer.close()
        for writer in (agent_writer, client_writer):
            with contextlib.suppress(OSError, ConnectionError):
                await writer.wait_closed()
