"""A session's MCP servers against the real fixture server over stdio: tools, results, at most once, failures.

The fixture journals every start and call (``fixtures/mcp_server/journal.py``), so retries and restarts are
counted, not guessed.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import MCPError
from mcp import types as mcp_types

from fixtures.hostile_mcp import stdio_spec as hostile_spec
from fixtures.mcp_server import ENGLAND_FLAG, read_journal, stdio_spec
from hermes_acp.core import ImageBlock, ImagePart
from hermes_acp.errors import OutcomeUnknownError, ToolError, ToolTimeoutError
from hermes_acp.mcp_client import McpTimeouts
from hermes_acp.mcp_client._failures import ServerRejected, TransportDropped
from hermes_acp.mcp_client._wire import translate_failure
from hermes_acp.tools.approval import Approval
from hermes_acp.tools.base import AnyTool, ToolOutcome
from hermes_acp.tools.context import ApprovalRequest
from tests.mcp.support import START_S, alive, context, find_tool, run_tool, running, text_of

pytestmark = pytest.mark.anyio


async def test_tools_are_offered_named_described_and_callable(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    async with running(tmp_path, [stdio_spec("fixture", journal, env={"FIXTURE_VALUE": "v1"})]) as servers:
        names = [t.name for t in servers.tools()]
        assert names == sorted(names)
        assert {
            "mcp__fixture__echo",
            "mcp__fixture__add_note",
            "mcp__fixture__list_resources",
            "mcp__fixture__read_resource",
            "mcp__fixture__list_prompts",
            "mcp__fixture__get_prompt",
        } <= set(names)
        assert servers.tools() is servers.tools(), "the same state gives the same list"

        echo = find_tool(servers, "mcp__fixture__echo")
        note = find_tool(servers, "mcp__fixture__add_note")
        ctx = context(tmp_path)
        assert echo.read_only and not note.read_only
        assert echo.present({"text": "x"}, ctx).kind == "read"
        assert note.present({"text": "x"}, ctx).title == "fixture: add_note"
        assert await echo.approval({"text": "x"}, ctx) == Approval(ctx.tool_call_id)
        assert await note.approval({"text": "x"}, ctx) == Approval(
            ctx.tool_call_id,
            request=ApprovalRequest(
                scope="mcp:fixture:add_note", title="fixture: add_note", mutating=True, raw_input={"text": "x"}
            ),
        )
        assert echo.input_schema["required"] == ["text"]
        with pytest.raises(ToolError, match="missing required argument"):
            echo.validate({})

        assert text_of(await run_tool(tmp_path, echo, text="hello")) == "hello"
        who = text_of(await run_tool(tmp_path, find_tool(servers, "mcp__fixture__whoami")))
        assert '"fixture_value": "v1"' in who
        assert f'"cwd": "{tmp_path / "workspace"}"' in who, "a stdio server starts in the session's cwd"
        assert "HERMES_ACP_HOME" not in who and "PYTEST_CURRENT_TEST" not in who, "only a minimal env is passed"

        rich = find_tool(servers, "mcp__fixture__rich_result")
        assert ENGLAND_FLAG in rich.description and "\U000e0069" not in rich.description
        outcome = await run_tool(tmp_path, rich)
        assert text_of(outcome) == f"flag {ENGLAND_FLAG} visible text"
        assert outcome.raw_output == {
            "structuredContent": {"answer": 42},
            "_meta": {"example.com/trace": "abc", "progress": 3, "mcp/plain": "not reserved"},
        }

        image = await run_tool(tmp_path, find_tool(servers, "mcp__fixture__snapshot"), colour="blue")
        part = next(p for p in image.parts if isinstance(p, ImagePart))
        assert Path(part.label or "").parent == tmp_path / "cache" / "images"
        assert any(isinstance(b, ImageBlock) for b in image.content)

        trip = find_tool(servers, "mcp__fixture__plan_trip")
        assert "$defs" in trip.input_schema
        planned = await run_tool(tmp_path, trip, trip={"name": "Tour", "stops": [{"city": "Oslo", "nights": 2}]})
        assert text_of(planned) == "Tour: Oslo (2)"

        failed = await run_tool(tmp_path, find_tool(servers, "mcp__fixture__fail"), message="nope")
        assert failed.failed and text_of(failed) == "nope"

        big = text_of(await run_tool(tmp_path, find_tool(servers, "mcp__fixture__big_text"), chars=300_000))
        assert big.startswith("BEGIN") and big.endswith("END") and "characters omitted" in big
        assert len(big) < 101_000
    assert read_journal(journal).count("start") == 1


async def test_resources_and_prompts_have_helpers(tmp_path: Path) -> None:
    async with running(tmp_path, [stdio_spec("docs")]) as servers:
        listing = text_of(await run_tool(tmp_path, find_tool(servers, "mcp__docs__list_resources")))
        assert "fixture://readme — readme: The fixture's README. (text/plain)" in listing
        read = await run_tool(tmp_path, find_tool(servers, "mcp__docs__read_resource"), uri="fixture://readme")
        assert "Fixture server docs" in text_of(read)
        prompts = text_of(await run_tool(tmp_path, find_tool(servers, "mcp__docs__list_prompts")))
        assert "- greet(name): Greet someone." in prompts
        got = await run_tool(
            tmp_path, find_tool(servers, "mcp__docs__get_prompt"), name="greet", arguments={"name": "Ada"}
        )
        assert "[user] Say hello to Ada." in text_of(got)
        missing = find_tool(servers, "mcp__docs__read_resource")
        with pytest.raises(ToolError, match="answered with an error"):
            await run_tool(tmp_path, missing, uri="fixture://nothing-here")


async def test_a_mutating_call_that_times_out_is_not_retried_and_the_connection_is_rebuilt(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    timeouts = McpTimeouts(connect_s=START_S, call_s=1.0, list_s=START_S)
    async with running(tmp_path, [stdio_spec("fixture", journal)], timeouts) as servers:
        with pytest.raises(OutcomeUnknownError) as caught:
            await run_tool(tmp_path, find_tool(servers, "mcp__fixture__sleep"), seconds=600)
        assert caught.value.code == "timeout_outcome_unknown"
        assert "not retried" in str(caught.value)
        assert text_of(await run_tool(tmp_path, find_tool(servers, "mcp__fixture__echo"), text="after")) == "after"
    view = read_journal(journal)
    assert len(view.calls("sleep")) == 1, "a mutating call whose outcome is unknown is never retried"
    assert view.count("start") == 2, "the connection was rebuilt before the next call"


async def test_a_mutating_call_whose_server_crashes_is_not_retried_and_the_server_respawns(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    async with running(tmp_path, [stdio_spec("fixture", journal)]) as servers:
        with pytest.raises(OutcomeUnknownError) as caught:
            await run_tool(tmp_path, find_tool(servers, "mcp__fixture__crash"))
        assert caught.value.code == "transport_outcome_unknown"
        before = [t.name for t in servers.tools()]
        assert "mcp__fixture__echo" in before, "tools stay offered while the server respawns"
        assert text_of(await run_tool(tmp_path, find_tool(servers, "mcp__fixture__echo"), text="back")) == "back"
        assert [t.name for t in servers.tools()] == before, "a reconnect keeps every name"
    view = read_journal(journal)
    assert len(view.calls("crash")) == 1
    assert len(set(view.pids)) == 2, "the crashed server was respawned by the next call"


@pytest.mark.parametrize("how", ["crash", "hang"])
async def test_a_read_only_call_is_retried_once_after_a_reconnect(tmp_path: Path, how: str) -> None:
    journal = tmp_path / "journal.jsonl"
    timeouts = McpTimeouts(connect_s=START_S, call_s=1.5, list_s=START_S)
    async with running(tmp_path, [stdio_spec("fixture", journal)], timeouts) as servers:
        lookup = find_tool(servers, "mcp__fixture__flaky_lookup")
        outcome = await run_tool(tmp_path, lookup, key="k", fail_first=1, how=how)
        assert text_of(outcome) == "value of k (after 1 failure(s))"
        error = ToolTimeoutError if how == "hang" else ToolError
        with pytest.raises(error, match="tried twice"):
            await run_tool(tmp_path, lookup, key="other", fail_first=5, how=how)
    view = read_journal(journal)
    assert [c["arguments"]["key"] for c in view.calls("flaky_lookup")] == ["k", "k", "other", "other"]
    assert view.count("start") == 3, "one reconnect per failure; the last failure reconnects lazily"


async def test_a_server_that_died_between_calls_is_respawned_before_a_mutating_call(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    async with running(tmp_path, [stdio_spec("fixture", journal)]) as servers:
        [first_pid] = read_journal(journal).pids
        os.kill(first_pid, signal.SIGKILL)
        [conn] = servers.connections
        with anyio.fail_after(START_S):
            await conn.wait_for(lambda c: c.state == "down")
        outcome = await run_tool(tmp_path, find_tool(servers, "mcp__fixture__add_note"), text="once")
        assert text_of(outcome) == "note #1 saved: once"
    view = read_journal(journal)
    assert len(view.calls("add_note")) == 1
    assert view.calls("add_note")[0]["pid"] != first_pid


async def test_servers_that_cannot_start_are_reported_once_and_break_nothing(tmp_path: Path) -> None:
    specs: list[dict[str, Any]] = [
        {"name": "missing", "command": str(tmp_path / "no-such-program"), "args": [], "env": []},
        {
            "name": "exits",
            "command": sys.executable,
            "args": ["-c", "import sys; print('boom: bad config', file=sys.stderr); sys.exit(2)"],
            "env": [],
        },
        {"type": "acp", "name": "inproc", "id": "x"},
        stdio_spec("good"),
    ]
    async with running(tmp_path, specs, wait=False) as servers:
        with anyio.fail_after(START_S):
            notices = await servers.prepare_turn(wait_s=START_S)
        text = "\n".join(notices)
        assert "'missing' could not be started: command not found" in text
        assert "'exits' could not be started" in text and "boom: bad config" in text
        assert "'inproc' was not started: MCP servers of type 'acp' are not supported" in text
        assert "good" not in text
        assert {t.name.split("__")[1] for t in servers.tools()} == {"good"}
        assert await servers.prepare_turn(wait_s=0) == [], "each failure is reported once"
        assert text_of(await run_tool(tmp_path, find_tool(servers, "mcp__good__echo"), text="ok")) == "ok"
    log = (tmp_path / "mcp-logs" / "exits.log").read_text()
    assert "boom: bad config" in log


async def test_a_server_still_starting_is_reported_then_offered_when_ready(tmp_path: Path) -> None:
    async with running(tmp_path, [stdio_spec("fixture")], wait=False) as servers:
        assert await servers.prepare_turn(wait_s=0) == [
            "⏳ MCP server 'fixture' is still starting; its tools will be offered once it is ready."
        ]
        assert servers.tools() == []
        with anyio.fail_after(START_S):
            assert await servers.prepare_turn(wait_s=START_S) == []
        assert "mcp__fixture__echo" in [t.name for t in servers.tools()]


async def test_a_server_that_never_answers_initialize_fails_after_the_connect_timeout(tmp_path: Path) -> None:
    silent = {"name": "silent", "command": sys.executable, "args": ["-c", "import time; time.sleep(600)"], "env": []}
    timeouts = McpTimeouts(connect_s=2.0, call_s=5.0, list_s=5.0)
    async with running(tmp_path, [silent], timeouts, wait=False) as servers:
        with anyio.fail_after(START_S):
            notices = await servers.prepare_turn(wait_s=START_S)
        assert notices == [
            "⚠ MCP server 'silent' could not be started: it did not finish starting within 2 s."
            " Its tools are not available."
        ]
        [conn] = servers.connections
        assert conn.state == "failed" and servers.tools() == []


async def test_closing_the_servers_ends_their_processes(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    async with running(tmp_path, [stdio_spec("a", journal), stdio_spec("b", journal)]) as servers:
        assert len(servers.tools()) > 2
        pids = read_journal(journal).pids
        assert len(pids) == 2 and all(alive(p) for p in pids)
    assert not any(alive(p) for p in pids)
    assert read_journal(journal).count("exit") == 2, "each server saw stdin close and exited on its own"


async def test_an_error_with_the_closed_code_from_a_live_server_is_its_error_not_a_dropped_connection(
    tmp_path: Path,
) -> None:
    """-32000 is the code the SDK gives a closed connection, and any server may answer with it: a live server's
    error is reported as its error, the call is not retried, and the connection (and calls beside it) stay."""
    journal = tmp_path / "hostile.jsonl"
    async with running(tmp_path, [hostile_spec("hostile", journal)]) as servers:
        explode = find_tool(servers, "mcp__hostile__explode")
        fail = find_tool(servers, "mcp__hostile__fail")
        outcomes: list[ToolOutcome[Any] | BaseException] = []

        async def call(tool: AnyTool) -> None:
            try:
                outcomes.append(await run_tool(tmp_path, tool))
            except ToolError as exc:
                outcomes.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, explode)
            tg.start_soon(call, fail)
        [conn] = servers.connections
        assert conn.connections == 1, "a live server's error did not rebuild the connection"
    errors = [o for o in outcomes if isinstance(o, ToolError)]
    assert len(errors) == 1 and "exploded" in str(errors[0]) and "connection broke" not in str(errors[0])
    [failed] = [o for o in outcomes if not isinstance(o, BaseException)]
    assert failed.failed and text_of(failed) == "failure"
    calls = [json.loads(line) for line in journal.read_text().splitlines() if '"tools/call"' in line]
    assert sorted(c["params"]["name"] for c in calls) == ["explode", "fail"], "nothing was sent twice"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Connection closed", TransportDropped),
        ("SSE stream ended without a response", TransportDropped),
        ("SSE stream failed: peer closed connection", TransportDropped),
        ("exploded", ServerRejected),
        ("Internal error", ServerRejected),
    ],
)
def test_only_the_sdks_own_closed_errors_are_a_dropped_connection(message: str, expected: type[Exception]) -> None:
    assert isinstance(translate_failure(MCPError(code=mcp_types.CONNECTION_CLOSED, message=message), []), expected)
