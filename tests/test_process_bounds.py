"""Inputs that could exhaust the agent, through the real ``python -m hermes_acp`` process: each one stops at its bound
(``hermes_acp/core/bounds.py``) with a clear message, the agent's memory stays bounded (its peak resident set is
checked against a generous ceiling and reported in the failure), and the session takes the next prompt as usual.

A model stream that never ends; an MCP answer of 200 MiB on one line; a 50 MB prompt; 10,000 tool calls in one
response; an MCP server with 5,000 tools; 10,000 steering messages sent while a turn waits for the user.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError

from fixtures.hostile_mcp import stdio_spec as hostile_spec
from hermes_acp.core.bounds import MAX_MCP_TOOLS_PER_SERVER, MAX_TOOL_CALLS_PER_RESPONSE, MAX_WAITING_STEERING
from hermes_acp.mcp_client.remote_tools import UTILITY_TOOLS
from tests.fakes.acp_client import PermissionCall, RecordingClient
from tests.fakes.agent_process import AgentProcess, spawn_agent

pytestmark = pytest.mark.anyio

PEAK_CEILING_MIB = 400
"""Far above what the agent needs (``make bench`` has the figures); far below what an unbounded input takes."""
TURN_S = 120.0


def _peak_mib(agent: AgentProcess) -> float:
    for line in Path(f"/proc/{agent.process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc")


def _rss_mib(agent: AgentProcess) -> float:
    for line in Path(f"/proc/{agent.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc")


def _tool_results(agent: AgentProcess, request: int) -> list[str]:
    messages = agent.model_requests()[request].body["messages"]
    return [m["content"] for m in messages if m.get("role") == "tool"]


async def _and_then_hello(agent: AgentProcess, session_id: str) -> None:
    answered = await agent.prompt(session_id, "and now hello", timeout=TURN_S)
    assert answered.stop_reason == "end_turn", "the session takes the next prompt as usual"


HELLO: dict[str, Any] = {"match": {"last_message_contains": "and now hello"}, "steps": [{"text": "Hello again."}]}


async def test_a_model_stream_that_never_ends_is_cut_and_the_turn_ends_max_tokens(tmp_path: Path) -> None:
    scenario = {"name": "endless", "responses": [HELLO, {"endless": True, "steps": [{"text": "never ending "}]}]}
    models = '[{ id = "m", max_output_tokens = 2000 }, "m2"]'
    async with spawn_agent(tmp_path, scenario, models=models) as agent:
        session_id = await agent.new_session()
        answered = await agent.prompt(session_id, "talk for ever", timeout=TURN_S)
        assert answered.stop_reason == "max_tokens"
        shown = "".join(agent.client.transcript(session_id)["messages"].values())
        notices = json.dumps(agent.client.of_kind("notice", session_id))
        assert "answer was cut" in shown + notices and "32,000 characters" in shown + notices
        assert 32_000 <= shown.count("never ending ") * 13 <= 40_000, "what was shown is kept, up to the bound"
        peak = _peak_mib(agent)
        assert peak < PEAK_CEILING_MIB, f"peak RSS {peak:.0f} MiB"
        await _and_then_hello(agent, session_id)
        assert await agent.shutdown() == 0
    store = sum(path.stat().st_size for path in (tmp_path / "home").glob("state.db*"))
    assert store < 4 * 1024 * 1024, f"the store grew to {store:,} bytes"


async def test_a_200_mib_mcp_answer_is_read_once_cut_and_never_sent_again(tmp_path: Path) -> None:
    journal = tmp_path / "hostile.jsonl"
    call = {"tool_call": {"id": "flood", "name": "mcp__hostile__flood", "arguments": {}}}
    scenario = {
        "name": "flood",
        "responses": [
            HELLO,
            {"match": {"last_message_contains": "flood"}, "steps": [call]},
            {"steps": [{"text": "ok"}]},
        ],
    }
    async with spawn_agent(tmp_path, scenario) as agent:
        session_id = await agent.new_session([hostile_spec(journal=journal, flood_mib=200)])
        answered = await agent.prompt(session_id, "flood me", timeout=TURN_S)
        assert answered.stop_reason == "end_turn"
        [result] = _tool_results(agent, 1)
        assert result.startswith("FLOOD") and "only its first 4,194,304 bytes were read" in result
        assert "209,715," in result, "the whole size is reported"
        calls = [json.loads(line) for line in journal.read_text().splitlines()]
        assert [c["params"].get("name") for c in calls if c["method"] == "tools/call"] == ["flood"], "sent once"
        peak = _peak_mib(agent)
        assert peak < PEAK_CEILING_MIB, f"peak RSS {peak:.0f} MiB"
        await _and_then_hello(agent, session_id)
        assert await agent.shutdown() == 0


async def test_a_50_mb_prompt_is_refused_with_the_limit(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, {"name": "hello", "responses": [HELLO]}) as agent:
        session_id = await agent.new_session()
        with pytest.raises(RequestError) as refused:
            await agent.prompt(session_id, "x" * 50_000_000, timeout=TURN_S)
        assert refused.value.code == -32602
        assert "16 MiB" in f"{refused.value} {refused.value.data}"
        peak = _peak_mib(agent)
        assert peak < PEAK_CEILING_MIB, f"peak RSS {peak:.0f} MiB"
        await _and_then_hello(agent, session_id)
        assert await agent.shutdown() == 0


async def test_ten_thousand_tool_calls_in_one_response_run_the_first_ones_and_say_so(tmp_path: Path) -> None:
    calls = [{"tool_call": {"id": f"c{n}", "name": "list_files", "arguments": {"path": "."}}} for n in range(10_000)]
    scenario = {"name": "many", "responses": [{"steps": calls}, {"steps": [{"text": "listed"}]}, HELLO]}
    async with spawn_agent(tmp_path, scenario) as agent:
        session_id = await agent.new_session()
        with anyio.fail_after(TURN_S):
            answered = await agent.prompt(session_id, "list a lot", timeout=TURN_S)
        assert answered.stop_reason == "end_turn"
        cards = agent.client.cards(session_id)
        assert len(cards) == MAX_TOOL_CALLS_PER_RESPONSE
        assert all(card["status"] == "completed" for card in cards.values())
        assert len(_tool_results(agent, 1)) == MAX_TOOL_CALLS_PER_RESPONSE
        said = "".join(agent.client.transcript(session_id)["messages"].values())
        assert "asked for 10,000 tool calls" in said and f"only the first {MAX_TOOL_CALLS_PER_RESPONSE} run" in said
        peak = _peak_mib(agent)
        assert peak < PEAK_CEILING_MIB, f"peak RSS {peak:.0f} MiB"
        await _and_then_hello(agent, session_id)
        assert await agent.shutdown() == 0


async def test_an_mcp_server_with_5000_tools_offers_the_first_ones_and_says_so(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, {"name": "tools", "responses": [{"steps": [{"text": "ok"}]}, HELLO]}) as agent:
        session_id = await agent.new_session([hostile_spec(extra_tools=5000)])
        answered = await agent.prompt(session_id, "which tools", timeout=TURN_S)
        assert answered.stop_reason == "end_turn"
        offered = [t["function"]["name"] for t in agent.model_requests()[0].body["tools"]]
        helpers = {f"mcp__hostile__{name}" for names in UTILITY_TOOLS.values() for name in names}
        listed = [name for name in offered if name.startswith("mcp__hostile__") and name not in helpers]
        assert len(listed) == MAX_MCP_TOOLS_PER_SERVER, "the server's own tools, the first ones it listed"
        told = json.dumps(agent.client.of_kind("notice", session_id)) + json.dumps(
            agent.client.transcript(session_id)["messages"]
        )
        assert f"lists more than {MAX_MCP_TOOLS_PER_SERVER} tools" in told
        peak = _peak_mib(agent)
        assert peak < PEAK_CEILING_MIB, f"peak RSS {peak:.0f} MiB"
        await _and_then_hello(agent, session_id)
        assert await agent.shutdown() == 0


STEERING_FLOOD = 10_000
STEER_CHARS = 8 * 1024
FLOOD_GROWTH_MIB = 40
"""What the flood may add to the agent's resident set: the messages it keeps are 256 KiB; all of them would be 80 MB."""


async def test_ten_thousand_steering_messages_stop_at_the_limit_and_the_next_request_holds_only_those(
    tmp_path: Path,
) -> None:
    asked = {"tool_call": {"id": "ask", "name": "terminal", "arguments": {"command": "echo asked"}}}
    scenario = {
        "name": "steered",
        "responses": [
            HELLO,
            {"match": {"last_message_contains": "a long job"}, "steps": [asked]},
            {"steps": [{"text": "steered"}]},
        ],
    }
    answer = anyio.Event()

    async def when_flooded(call: PermissionCall) -> str:
        await answer.wait()
        return "allow_once"

    async with spawn_agent(tmp_path, scenario, client=RecordingClient(on_permission=when_flooded)) as agent:
        session_id = await agent.new_session()
        outcomes: list[str] = []

        async def steer(n: int) -> None:
            text = f"steer-{n:05d} " + "x" * STEER_CHARS
            try:
                result = await agent.conn.ext_method(
                    "session/steering", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
                )
                outcomes.append(result["outcome"])
            except RequestError as refused:
                outcomes.append(f"{refused.code} {refused}")

        async with anyio.create_task_group() as group:
            prompted: list[Any] = []

            async def prompt() -> None:
                prompted.append(await agent.prompt(session_id, "a long job", timeout=TURN_S))

            group.start_soon(prompt)
            await agent.client.wait_for(lambda: bool(agent.client.permissions), timeout=TURN_S)
            before = _rss_mib(agent)
            with anyio.fail_after(TURN_S):
                for start in range(0, STEERING_FLOOD, 100):
                    async with anyio.create_task_group() as batch:
                        for n in range(start, start + 100):
                            batch.start_soon(steer, n)
            grown = _rss_mib(agent) - before
            answer.set()
        assert prompted[0].stop_reason == "end_turn"
        assert outcomes.count("injected") == MAX_WAITING_STEERING
        refusals = [o for o in outcomes if o != "injected"]
        assert len(refusals) == STEERING_FLOOD - MAX_WAITING_STEERING
        assert all(o.startswith("-32602 ") for o in refusals), refusals[0]
        said = refusals[0]
        assert "too many steering messages waiting for the running turn's next safe point" in said, said
        assert f"the limit is {MAX_WAITING_STEERING}, 16 MiB together" in said, said
        assert grown < FLOOD_GROWTH_MIB, f"the agent grew by {grown:.0f} MiB during the flood"
        steered = agent.model_requests()[1]
        sent = json.dumps(steered.body)
        assert sent.count("steer-") == MAX_WAITING_STEERING, "the ones taken, and nothing merged into them"
        assert len(sent) < (MAX_WAITING_STEERING + 8) * STEER_CHARS, f"the request is {len(sent):,} characters"
        await _and_then_hello(agent, session_id)
        assert await agent.shutdown() == 0
    store = sum(path.stat().st_size for path in (tmp_path / "home").glob("state.db*"))
    assert store < 4 * 1024 * 1024, f"the refused messages were not stored: the store is {store:,} bytes"
