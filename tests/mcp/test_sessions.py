"""MCP servers in sessions, over the ACP wire in one process: session/new does not wait, the first request does
(bounded), failures reach the user, approvals and modes apply, sessions are isolated, close ends the servers."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from fixtures.mcp_server import read_journal, stdio_spec
from hermes_acp.providers.scripted import ScriptedProvider, text_reply, tool_reply
from tests.fakes.agent_process import servers as acp_servers
from tests.fakes.server import Pair, open_pair
from tests.fakes.tools import call
from tests.mcp.support import START_S, alive

pytestmark = pytest.mark.anyio


async def new_session(pair: Pair, specs: list[dict[str, Any]]) -> str:
    response = await pair.conn.new_session(cwd=str(pair.workspace), mcp_servers=acp_servers(specs))
    return response.session_id


def offered(provider: ScriptedProvider, index: int) -> list[str]:
    return [t.name for t in provider.requests[index].tools]


async def test_session_new_does_not_wait_for_a_server_that_never_answers(tmp_path: Path) -> None:
    silent = {"name": "silent", "command": sys.executable, "args": ["-c", "import time; time.sleep(600)"], "env": []}
    async with open_pair(tmp_path, provider=ScriptedProvider([])) as pair:
        with anyio.fail_after(5):  # the connect timeout is 30 s: waiting for the server would fail this
            session_id = await new_session(pair, [silent, stdio_spec("fixture")])
            await pair.conn.close_session(session_id=session_id)


async def test_the_first_request_waits_for_servers_and_a_tool_call_goes_through(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    provider = ScriptedProvider([tool_reply(call("c1", "mcp__fixture__echo", text="hi")), text_reply("done")])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await new_session(pair, [stdio_spec("fixture", journal)])
        with anyio.fail_after(START_S):
            response = await pair.prompt(session_id, "use the tool")
        assert response.stop_reason == "end_turn"
        names = offered(provider, 0)
        mcp_names = [n for n in names if n.startswith("mcp__")]
        assert "mcp__fixture__echo" in mcp_names
        assert names[-len(mcp_names) :] == sorted(mcp_names), "MCP tools follow the built-ins, sorted by name"
        assert offered(provider, 0) == offered(provider, 1)
        card = pair.client.cards(session_id)["c1"]
        assert card["status"] == "completed" and card["title"] == "fixture: Echo" and card["kind"] == "read"
        assert card["content"] == [{"type": "content", "content": {"type": "text", "text": "hi"}}]
        assert pair.client.permissions == [], "a read-only MCP tool needs no approval"
    assert len(read_journal(journal).calls("echo")) == 1


async def test_a_server_that_fails_is_reported_with_the_prompt_and_the_turn_goes_on(tmp_path: Path) -> None:
    missing = {"name": "ghost", "command": str(tmp_path / "no-such-program"), "args": [], "env": []}
    provider = ScriptedProvider([text_reply("first"), text_reply("second")])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await new_session(pair, [missing])
        with anyio.fail_after(START_S):
            await pair.prompt(session_id, "hello")
            first = pair.client.text(session_id)
            await pair.prompt(session_id, "again")
        assert "MCP server 'ghost' could not be started: command not found" in first
        assert pair.client.text(session_id).count("could not be started") == 1, "reported once"
        assert not any(name.startswith("mcp__") for name in offered(provider, 0))


async def test_a_request_goes_out_without_a_server_still_starting_and_says_so(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [text_reply("without"), tool_reply(call("e1", "mcp__fixture__echo", text="x")), text_reply("ok")]
    )
    async with open_pair(tmp_path, provider=provider, config="[mcp]\nready_wait_s = 0\n") as pair:
        session_id = await new_session(pair, [stdio_spec("fixture")])
        with anyio.fail_after(START_S):
            await pair.prompt(session_id, "now")
        assert "MCP server 'fixture' is still starting" in pair.client.text(session_id)
        assert not any(n.startswith("mcp__") for n in offered(provider, 0))
        with anyio.fail_after(START_S):
            await pair.prompt(session_id, "/mcp reconnect fixture")  # answered once the server is ready
            assert "Reconnected MCP server 'fixture': ready" in pair.client.text(session_id)
            await pair.prompt(session_id, "later")
        assert "mcp__fixture__echo" in offered(provider, 1)
        assert pair.client.cards(session_id)["e1"]["status"] == "completed"


async def test_cancel_stops_a_running_mcp_call_and_the_server_stays(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    provider = ScriptedProvider(
        [
            tool_reply(call("slow", "mcp__fixture__slow_echo", text="late", seconds=600)),
            tool_reply(call("quick", "mcp__fixture__echo", text="next")),
            text_reply("done"),
        ]
    )
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await new_session(pair, [stdio_spec("fixture", journal)])

        def running() -> bool:
            return pair.client.cards(session_id).get("slow", {}).get("status") == "in_progress"

        async with anyio.create_task_group() as tg:
            result: list[Any] = []

            async def prompt() -> None:
                result.append(await pair.prompt(session_id, "slow"))

            tg.start_soon(prompt)
            await pair.client.wait_for(running, timeout=START_S)
            await pair.conn.cancel(session_id=session_id)
        assert result[0].stop_reason == "cancelled"
        assert pair.client.cards(session_id)["slow"]["status"] == "failed"
        with anyio.fail_after(START_S):
            await pair.prompt(session_id, "quick")
        assert pair.client.cards(session_id)["quick"]["status"] == "completed"
    assert read_journal(journal).count("start") == 1, "a cancelled call does not cost the connection"


async def test_mutating_tools_ask_first_and_read_only_mode_hides_them(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    provider = ScriptedProvider(
        [tool_reply(call("n1", "mcp__fixture__add_note", text="x")), text_reply("refused"), text_reply("ro")]
    )
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await new_session(pair, [stdio_spec("fixture", journal)])
        with anyio.fail_after(START_S):
            await pair.prompt(session_id, "write a note")
        [question] = pair.client.permissions
        assert question.tool_call["toolCallId"] == "n1"
        assert pair.client.cards(session_id)["n1"]["status"] == "failed"
        await pair.conn.set_session_mode(session_id=session_id, mode_id="read_only")
        with anyio.fail_after(START_S):
            await pair.prompt(session_id, "read only now")
        assert "mcp__fixture__add_note" in offered(provider, 0)
        assert "mcp__fixture__add_note" not in offered(provider, 2)
        assert "mcp__fixture__echo" in offered(provider, 2)
    assert read_journal(journal).calls("add_note") == [], "a refused call is not sent"


async def test_two_sessions_with_a_same_named_server_are_isolated(tmp_path: Path) -> None:
    journal_a, journal_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    spec_a = stdio_spec("fixture", journal_a, env={"FIXTURE_VALUE": "A"}, tools=["echo", "whoami"])
    spec_b = stdio_spec("fixture", journal_b, env={"FIXTURE_VALUE": "B"}, tools=["add_note", "whoami"])
    provider = ScriptedProvider(
        [
            tool_reply(call("a1", "mcp__fixture__whoami")),
            text_reply("a done"),
            tool_reply(call("b1", "mcp__fixture__whoami")),
            tool_reply(call("b2", "mcp__fixture__echo", text="not mine")),
            text_reply("b done"),
        ]
    )
    async with open_pair(tmp_path, provider=provider) as pair:
        session_a = await new_session(pair, [spec_a])
        session_b = await new_session(pair, [spec_b])
        with anyio.fail_after(START_S):
            await pair.prompt(session_a, "who")
            await pair.prompt(session_b, "who")
        tools_a, tools_b = offered(provider, 0), offered(provider, 2)
        assert "mcp__fixture__echo" in tools_a and "mcp__fixture__add_note" not in tools_a
        assert "mcp__fixture__add_note" in tools_b and "mcp__fixture__echo" not in tools_b
        who_a = json.loads(pair.client.cards(session_a)["a1"]["content"][0]["content"]["text"])
        who_b = json.loads(pair.client.cards(session_b)["b1"]["content"][0]["content"]["text"])
        assert (who_a["fixture_value"], who_b["fixture_value"]) == ("A", "B")
        assert who_a["pid"] != who_b["pid"]
        assert pair.client.cards(session_b)["b2"]["status"] == "failed", "B cannot reach A's echo"
        await pair.conn.close_session(session_id=session_a)
        assert not alive(who_a["pid"]) and alive(who_b["pid"]), "closing one session leaves the other's server"
    assert read_journal(journal_a).count("start") == read_journal(journal_b).count("start") == 1


@pytest.mark.parametrize("how", ["close", "delete"])
async def test_close_and_delete_end_the_servers(tmp_path: Path, how: str) -> None:
    journal = tmp_path / "journal.jsonl"
    provider = ScriptedProvider([text_reply("ready")])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await new_session(pair, [stdio_spec("one", journal), stdio_spec("two", journal)])
        with anyio.fail_after(START_S):
            await pair.prompt(session_id, "start them")
        pids = read_journal(journal).pids
        assert len(pids) == 2 and all(alive(p) for p in pids)
        with anyio.fail_after(START_S):
            if how == "close":
                await pair.conn.close_session(session_id=session_id)
            else:
                await pair.conn.delete_session(session_id=session_id)
        assert not any(alive(p) for p in pids)
    assert read_journal(journal).count("exit") == 2


async def test_leaving_the_connection_ends_every_server(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    provider = ScriptedProvider([text_reply("a"), text_reply("b")])
    async with open_pair(tmp_path, provider=provider) as pair:
        for _ in range(2):
            session_id = await new_session(pair, [stdio_spec("fixture", journal)])
            with anyio.fail_after(START_S):
                await pair.prompt(session_id, "start")
        pids = read_journal(journal).pids
        assert len(pids) == 2 and all(alive(p) for p in pids)
    assert not any(alive(p) for p in pids)


async def test_acp_http_and_sse_entries_are_accepted(tmp_path: Path) -> None:
    specs: list[Any] = [
        acp.schema.HttpMcpServer(type="http", name="h", url="http://127.0.0.1:9/mcp", headers=[]),
        acp.schema.SseMcpServer(type="sse", name="s", url="http://127.0.0.1:9/sse", headers=[]),
    ]
    provider = ScriptedProvider([text_reply("ok")])
    async with open_pair(tmp_path, provider=provider) as pair:
        response = await pair.conn.new_session(cwd=str(pair.workspace), mcp_servers=specs)
        with anyio.fail_after(START_S):
            await pair.prompt(response.session_id, "hi")
        text = pair.client.text(response.session_id)
        assert "MCP server 'h' could not be started" in text and "MCP server 's' could not be started" in text
