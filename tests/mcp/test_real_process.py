"""Regression tests through the real process (docs/architecture.md §4.6): ``python -m hermes_acp`` spawned with the
scripted model server and the stdio fixture MCP server. After every kind of switch — session/set_model,
set_config_option (model and mode), set_mode, fork, load, resume — the recorded model requests still offer the MCP
tools, a tool call still works, and the server was not restarted (its journal counts the starts). Also: the servers end
when the agent exits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.mcp_server import read_journal, stdio_spec
from tests.fakes.agent_process import MODEL_2, AgentProcess, servers, spawn_agent
from tests.mcp.support import START_S, alive

pytestmark = pytest.mark.anyio

ECHO = "mcp__fixture__echo"


def two_echo_turns() -> dict[str, Any]:
    """Turn 1 calls echo("one"), turn 2 calls echo("two"); each ends with a short answer."""
    return {
        "name": "echo twice",
        "responses": [
            {"steps": [{"tool_call": {"id": "call_one", "name": ECHO, "arguments": {"text": "one"}}}]},
            {"steps": [{"text": "first done"}]},
            {"steps": [{"tool_call": {"id": "call_two", "name": ECHO, "arguments": {"text": "two"}}}]},
            {"steps": [{"text": "second done"}]},
        ],
    }


def card(agent: AgentProcess, session_id: str, call_id: str) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for kind in ("tool_call", "tool_call_update"):
        for update in agent.client.of_kind(kind, session_id):
            if update["toolCallId"] == call_id:
                state.update(update)
    return state


async def switch(agent: AgentProcess, how: str, session_id: str, spec: dict[str, Any]) -> str:
    """Do the switch; the session the second turn runs in."""
    cwd = str(agent.workspace)
    if how == "set_model":
        await agent.request("session/set_model", {"sessionId": session_id, "modelId": MODEL_2})
    elif how == "config_model":
        await agent.conn.set_config_option(config_id="model", session_id=session_id, value=MODEL_2)
    elif how == "config_mode":
        await agent.conn.set_config_option(config_id="mode", session_id=session_id, value="accept_edits")
    elif how == "set_mode":
        await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
    elif how == "fork":
        forked = await agent.conn.fork_session(session_id=session_id, cwd=cwd, mcp_servers=[])
        return forked.session_id
    elif how == "load":
        await agent.conn.load_session(cwd=cwd, session_id=session_id, mcp_servers=servers([spec]))
    elif how == "resume":
        await agent.conn.resume_session(session_id=session_id, cwd=cwd, mcp_servers=servers([spec]))
    else:
        raise AssertionError(how)
    return session_id


@pytest.mark.parametrize("how", ["set_model", "config_model", "config_mode", "set_mode", "fork", "load", "resume"])
async def test_mcp_tools_survive_a_switch_without_a_restart(tmp_path: Path, how: str) -> None:
    journal = tmp_path / "journal.jsonl"
    spec = stdio_spec("fixture", journal)
    async with spawn_agent(tmp_path, two_echo_turns()) as agent:
        session_id = await agent.new_session([spec])
        with anyio.fail_after(START_S):
            first = await agent.prompt(session_id, "echo one")
            [server_pid] = read_journal(journal).pids
            second_session = await switch(agent, how, session_id, spec)
            second = await agent.prompt(second_session, "echo two")
        assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
        offered = agent.offered_tools()
        assert len(offered) == 4
        assert all(ECHO in names for names in offered), offered
        assert offered[2] == offered[0], "the same MCP tools, byte for byte, after the switch"
        if how in ("set_model", "config_model"):
            assert agent.model_requests()[2].body["model"] == "m2"
        assert card(agent, session_id, "call_one")["status"] == "completed"
        done = card(agent, second_session, "call_two")
        assert done["status"] == "completed"
        assert done["content"] == [{"type": "content", "content": {"type": "text", "text": "two"}}]
        view = read_journal(journal)
        assert [c["arguments"]["text"] for c in view.calls("echo")] == ["one", "two"]
        if how == "fork":
            assert view.count("start") == 2, "the fork runs its own copy of the parent's server"
            assert view.calls("echo")[1]["pid"] != server_pid
        else:
            assert view.count("start") == 1, f"{how} restarted the MCP server"
            assert view.calls("echo")[1]["pid"] == server_pid
        assert alive(server_pid), "the parent session's server still runs"
        agent.assert_json_rpc_only()


async def test_a_session_loaded_in_a_new_process_gets_its_servers_back(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    spec = stdio_spec("fixture", journal)
    scenario = two_echo_turns()
    async with spawn_agent(tmp_path, {**scenario, "responses": scenario["responses"][:2]}) as agent:
        session_id = await agent.new_session([spec])
        with anyio.fail_after(START_S):
            await agent.prompt(session_id, "echo one")
        assert await agent.shutdown() == 0
    [first_pid] = read_journal(journal).pids
    assert not alive(first_pid), "the server ended with the agent"
    async with spawn_agent(tmp_path, {**scenario, "responses": scenario["responses"][2:]}) as agent:
        with anyio.fail_after(START_S):
            await agent.conn.load_session(cwd=str(agent.workspace), session_id=session_id, mcp_servers=servers([spec]))
            await agent.prompt(session_id, "echo two")
        assert all(ECHO in names for names in agent.offered_tools())
        assert card(agent, session_id, "call_two")["status"] == "completed"
    view = read_journal(journal)
    assert [c["arguments"]["text"] for c in view.calls("echo")] == ["one", "two"]
    assert view.count("start") == 2


async def test_the_agent_exiting_ends_every_mcp_server(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    scenario = {"name": "hi", "responses": [{"steps": [{"text": "hi"}], "repeat": True}]}
    async with spawn_agent(tmp_path, scenario) as agent:
        first = await agent.new_session([stdio_spec("one", journal), stdio_spec("two", journal)])
        second = await agent.new_session([stdio_spec("three", journal)])
        with anyio.fail_after(START_S):
            await agent.prompt(first, "start")
            await agent.prompt(second, "start")
        pids = read_journal(journal).pids
        assert len(pids) == 3 and all(alive(p) for p in pids)
        assert await agent.shutdown() == 0
    assert not any(alive(p) for p in pids), "no MCP server outlives the agent"
    assert read_journal(journal).count("exit") == 3


async def test_lone_surrogates_from_an_mcp_server_settle_the_card_at_once_with_the_text_made_safe(
    tmp_path: Path,
) -> None:
    """They used to stall the turn for the whole call timeout (the SDK dropped the answer it could not decode)."""
    scenario = {
        "name": "surrogates",
        "responses": [
            {"steps": [{"tool_call": {"id": "call_s", "name": "mcp__fixture__surrogates", "arguments": {}}}]},
            {"steps": [{"text": "seen"}]},
        ],
    }
    async with spawn_agent(tmp_path, scenario) as agent:
        session_id = await agent.new_session([stdio_spec("fixture", tmp_path / "journal.jsonl")])
        with anyio.fail_after(START_S):
            done = await agent.prompt(session_id, "call it")
        settled = card(agent, session_id, "call_s")
        agent.assert_json_rpc_only()
    assert done.stop_reason == "end_turn" and settled["status"] == "completed"
    [block] = settled["content"]
    assert block["content"]["text"] == (
        "lone \ufffd here, a reversed pair \ufffd\ufffd, and a pair split across blocks: \ufffd\n"
        "\ufffd and a real pair \U0001f600"
    )
