"""Streamable HTTP and SSE: real fixture servers on 127.0.0.1 (child processes), with the editor's headers."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import anyio
import pytest

from fixtures.mcp_server import read_journal, serve_http
from hermes_acp.errors import McpServerUnavailableError, OutcomeUnknownError, ToolError
from hermes_acp.mcp_client import McpTimeouts
from hermes_acp.providers.scripted import ScriptedProvider, text_reply, tool_reply
from tests.fakes.agent_process import servers as acp_servers
from tests.fakes.server import open_pair
from tests.fakes.tools import call
from tests.mcp.gateway import gateway
from tests.mcp.support import START_S, find_tool, run_tool, running, text_of

pytestmark = pytest.mark.anyio

TOKEN = "X-Fixture-Token=t0k3n-for-tests"


def http_spec(kind: Literal["http", "sse"], url: str, *, token: str | None = "t0k3n-for-tests") -> dict[str, Any]:
    headers = [{"name": "X-Fixture-Token", "value": token}] if token is not None else []
    return {"type": kind, "name": "web", "url": url, "headers": headers}


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_a_remote_server_works_with_the_editors_headers(tmp_path: Path, kind: Literal["http", "sse"]) -> None:
    journal = tmp_path / "journal.jsonl"
    async with serve_http(kind, journal, require_header=TOKEN) as server:
        async with running(tmp_path, [http_spec(kind, server.url)]) as servers:
            assert text_of(await run_tool(tmp_path, find_tool(servers, "mcp__web__echo"), text="over " + kind)) == (
                "over " + kind
            )
            note = await run_tool(tmp_path, find_tool(servers, "mcp__web__add_note"), text="n")
            assert text_of(note) == "note #1 saved: n"
            listing = text_of(await run_tool(tmp_path, find_tool(servers, "mcp__web__list_resources")))
            assert "fixture://readme" in listing
    view = read_journal(journal)
    assert view.count("http") > 0 and all(e["header_ok"] for e in view.of("http"))
    assert [c["tool"] for c in view.calls()] == ["echo", "add_note"]


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_a_remote_server_that_refuses_us_is_reported(tmp_path: Path, kind: Literal["http", "sse"]) -> None:
    async with (
        serve_http(kind, tmp_path / "journal.jsonl", require_header=TOKEN) as server,
        running(tmp_path, [http_spec(kind, server.url, token="wrong")], wait=False) as servers,
    ):
        with anyio.fail_after(START_S):
            [notice] = await servers.prepare_turn(wait_s=START_S)
        assert notice.startswith("⚠ MCP server 'web' could not be started:")
        # The SDK's streamable HTTP client reports any HTTP error status as "an error response"; SSE keeps it.
        assert ("HTTP 401" if kind == "sse" else "Server returned an error response") in notice, notice
        assert servers.tools() == []


async def test_nothing_listening_is_reported(tmp_path: Path) -> None:
    async with running(tmp_path, [http_spec("http", "http://127.0.0.1:9/mcp")], wait=False) as servers:
        with anyio.fail_after(START_S):
            [notice] = await servers.prepare_turn(wait_s=START_S)
        assert "'web' could not be started" in notice


async def test_http_timeouts_and_crashes_are_at_most_once(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    timeouts = McpTimeouts(connect_s=START_S, call_s=1.0, list_s=START_S)
    async with (
        serve_http("http", journal) as server,
        running(tmp_path, [http_spec("http", server.url)], timeouts) as servers,
    ):
        with pytest.raises(OutcomeUnknownError) as timed_out:
            await run_tool(tmp_path, find_tool(servers, "mcp__web__sleep"), seconds=600)
        assert timed_out.value.code == "timeout_outcome_unknown"
        assert (
            text_of(await run_tool(tmp_path, find_tool(servers, "mcp__web__echo"), text="still here")) == "still here"
        )
        [conn] = servers.connections
        assert conn.connections == 2, "the connection was rebuilt before the next call"
        with pytest.raises(OutcomeUnknownError) as crashed:
            await run_tool(tmp_path, find_tool(servers, "mcp__web__crash"))
        assert crashed.value.code == "transport_outcome_unknown"
        with pytest.raises(McpServerUnavailableError, match="not sent"):
            await run_tool(tmp_path, find_tool(servers, "mcp__web__add_note"), text="never")
    view = read_journal(journal)
    assert [c["tool"] for c in view.calls()] == ["sleep", "echo", "crash"]
    assert view.count("start") == 1


async def test_an_http_server_from_the_editor_works_in_a_session(tmp_path: Path) -> None:
    provider = ScriptedProvider([tool_reply(call("h1", "mcp__web__echo", text="via http")), text_reply("ok")])
    async with (
        serve_http("http", tmp_path / "journal.jsonl", require_header=TOKEN) as server,
        open_pair(tmp_path, provider=provider) as pair,
    ):
        response = await pair.conn.new_session(
            cwd=str(pair.workspace), mcp_servers=acp_servers([http_spec("http", server.url)])
        )
        with anyio.fail_after(START_S):
            await pair.prompt(response.session_id, "call it")
        result = pair.client.cards(response.session_id)["h1"]
        assert result["status"] == "completed"
        assert result["content"][0]["content"]["text"] == "via http"


async def test_a_gateway_failure_after_forwarding_is_an_unknown_outcome(tmp_path: Path) -> None:
    """A 502/504 from a proxy does not mean the server did not act: outcome unknown, never retried when mutating."""
    journal = tmp_path / "journal.jsonl"
    failures = {"add_note": [502], "echo": [504], "whoami": [500]}
    async with (
        serve_http("http", journal) as server,
        gateway(server.url, failures) as gw,
        running(tmp_path, [http_spec("http", gw.url)]) as servers,
    ):
        with pytest.raises(OutcomeUnknownError) as unknown:
            await run_tool(tmp_path, find_tool(servers, "mcp__web__add_note"), text="once")
        assert unknown.value.code == "transport_outcome_unknown"
        # A read-only call is replayed once on a fresh connection.
        assert text_of(await run_tool(tmp_path, find_tool(servers, "mcp__web__echo"), text="again")) == "again"
        # An error status the server itself gives is its answer: a tool error, not retried.
        with pytest.raises(ToolError, match="answered with an error") as rejected:
            await run_tool(tmp_path, find_tool(servers, "mcp__web__whoami"))
        assert not isinstance(rejected.value, OutcomeUnknownError)
    assert gw.replaced == [("add_note", 502), ("echo", 504), ("whoami", 500)]
    assert [c["tool"] for c in read_journal(journal).calls()] == ["add_note", "echo", "echo", "whoami"]
