"""Start-up: ``initialize`` is answered while the rest of the server still loads; everything else that arrives in
the meantime waits and is answered in order once the server is up, by the one code path of its method. A server
that cannot load, a configuration that cannot be used and a path the OS cannot take all get clear answers.

The load is held with an event, so the test decides when it ends."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.model_server import serve_model_server
from hermes_acp.jsonrpc.link import LineWriter
from hermes_acp.protocol.connection import Serve
from hermes_acp.telemetry import configure_logging
from hermes_acp.transports.stdio import serve_streams
from tests.fakes.sandbox_pin import pin_sandbox
from tests.fakes.server import RawPair, socket_streams

pytestmark = pytest.mark.anyio
GOLDEN = Path(__file__).parent.parent / "golden"
REPO = Path(__file__).resolve().parent.parent.parent


def _load_app() -> Serve:
    from hermes_acp.app import run_connection

    return run_connection


@contextlib.asynccontextmanager
async def held_server(
    tmp_path: Path, config: str, load: Callable[[], Serve] = _load_app
) -> AsyncIterator[tuple[RawPair, threading.Event]]:
    """The production ``run_connection`` over a socketpair, with its load held until ``release`` is set."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(pin_sandbox(config))
    release = threading.Event()

    def held_load() -> Serve:
        if not release.wait(timeout=30):
            raise TimeoutError("the test never released the server load")
        return load()

    env = {"HERMES_ACP_HOME": str(home), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    try:
        async with socket_streams() as (agent_reader, agent_writer, client_reader, client_writer):
            async with anyio.create_task_group() as tg:
                tg.start_soon(serve_streams, agent_reader, LineWriter(agent_writer), held_load, env)
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


async def test_initialize_is_answered_while_the_server_loads_and_the_rest_waits_for_it(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with held_server(tmp_path, "") as (raw, release):
        await raw.send(_request(1, "initialize", {"protocolVersion": 1}))
        assert (await raw.response(1))["result"]["protocolVersion"] == 1
        assert not release.is_set(), "initialize was answered while the load was held"
        await raw.send(_request(2, "session/new", {"cwd": str(workspace), "mcpServers": []}))
        release.set()
        new = await raw.receive(timeout=30)
        commands = await raw.receive()
        await raw.send(_request(3, "session/list", {}))
        listed = await raw.response(3)
    assert new["id"] == 2, new
    session_id = new["result"]["sessionId"]
    assert commands["method"] == "session/update", "available_commands_update follows the response"
    assert commands["params"]["update"]["sessionUpdate"] == "available_commands_update"
    assert [s["sessionId"] for s in listed["result"]["sessions"]] == [session_id]
    result = new["result"]
    result["sessionId"] = "<session id>"
    golden = json.loads((GOLDEN / "session_new.json").read_text())
    for key in ("configOptions", "models"):  # no model is configured here, so no model option
        golden.pop(key, None)
        result.pop(key, None)
    assert result == golden


async def test_a_session_opened_during_the_load_runs_its_mcp_servers_and_answers_prompts(tmp_path: Path) -> None:
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
            release.set()
            session_id = (await raw.response(2, timeout=30))["result"]["sessionId"]
            prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hello"}]}
            await raw.send(_request(3, "session/prompt", prompt))
            answer = await raw.response(3, timeout=60)
        offered = [t["function"]["name"] for t in model.requests()[0].body.get("tools", [])]
    assert answer["result"]["stopReason"] == "end_turn"
    assert "mcp__fixture__echo" in offered


@pytest.mark.parametrize(("where", "field"), [("cwd", "cwd"), ("additionalDirectories", "additionalDirectories[0]")])
async def test_a_nul_byte_in_a_path_is_invalid_params_and_the_server_keeps_serving(
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


async def test_a_server_that_cannot_load_answers_every_request_with_why(tmp_path: Path) -> None:
    def broken() -> Serve:
        raise ImportError("No module named 'a_missing_dependency'")

    async with held_server(tmp_path, "", load=broken) as (raw, release):
        await raw.send(_request(1, "initialize", {"protocolVersion": 1}))
        assert "result" in await raw.response(1)
        await raw.send(_request(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        release.set()
        waiting = await raw.response(2, timeout=30)
        await raw.send(_request(3, "session/list", {}))
        later = await raw.response(3)
    for answer in (waiting, later):
        assert answer["error"]["code"] == -32603
        assert "could not load" in answer["error"]["message"]
        assert "a_missing_dependency" in answer["error"]["message"]


async def test_a_broken_config_still_serves_initialize_and_names_the_problem_in_session_requests(
    tmp_path: Path,
) -> None:
    async with held_server(tmp_path, "[agent]\nmax_turn_requests = 'many'\n") as (raw, release):
        release.set()
        await raw.send(_request(1, "initialize", {"protocolVersion": 1}))
        assert "result" in await raw.response(1)
        await raw.send(_request(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        error = (await raw.response(2, timeout=30))["error"]
    assert error["code"] == -32603
    assert "max_turn_requests" in error["message"]
    assert "config.toml" in error["message"]
