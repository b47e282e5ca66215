"""Compaction through the real ``python -m hermes_acp`` process and the scripted model server with a context limit.

The model ``fx:m`` is configured with a 4,000-token window and the server refuses, with each service's own error,
any request its estimate puts over its limit. Long sessions run past the window with and without the client's
``session.compaction`` capability; a provider that refuses a request as too long is compacted for and answered;
``/compact`` takes instructions and ``/status`` answers without a model call; a server killed while a summary is
written, or after a compaction, reloads and goes on; a fork carries the compaction; a cancel while the summary is
written keeps the old history; a failing summary request falls back to dropping; a tool result larger than the
window is cut to a stub. Every frame is checked against the ACP schema when the harness ends.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.model_server import RequestRecord
from tests.fakes.agent_process import AgentProcess, spawn_agent

pytestmark = pytest.mark.anyio

MARKER = "You write the memory of a coding agent"
"""In the summary request's system prompt: how the scenarios tell it from a turn's request."""
SUMMARY = "Goal: answer the numbered questions. Open tasks: the next question."
WINDOW = '[{ id = "m", context_window = 4000 }, "m2"]'


def question(n: int) -> str:
    return f"question {n}: " + "q" * 400


def scenario(
    *, summary: dict[str, Any] | None = None, limit: int = 4_000, flavour: str | None = None, held: bool = False
) -> dict[str, Any]:
    """Summary requests get ``SUMMARY`` (with ``summary``'s response options), everything else a 400-character
    answer; the server refuses what it estimates above ``limit`` tokens with ``flavour``'s error. ``held``: the first
    summary stops after its first chunk and stays open until the agent lets go of it."""
    context: dict[str, Any] = {"tokens": limit} | ({"flavour": flavour} if flavour else {})
    summaries: list[dict[str, Any]] = [
        {"match": {"system_contains": MARKER}, "repeat": True, "steps": [{"text": SUMMARY}], **(summary or {})}
    ]
    if held:
        summaries.insert(
            0, {"match": {"system_contains": MARKER}, "hold_after_chunks": 1, "steps": [{"text": SUMMARY}]}
        )
    return {
        "name": "long-session",
        "context_limit": context,
        "responses": [*summaries, {"repeat": True, "steps": [{"text": "answer: " + "a" * 400}]}],
    }


def turn_requests(agent: AgentProcess) -> list[RequestRecord]:
    return [r for r in agent.model_requests() if MARKER not in _system(r)]


def summary_requests(agent: AgentProcess) -> list[RequestRecord]:
    return [r for r in agent.model_requests() if MARKER in _system(r)]


def _system(record: RequestRecord) -> str:
    messages = (record.body or {}).get("messages") or []
    return str(messages[0].get("content")) if messages and messages[0].get("role") == "system" else ""


def first_user_text(record: RequestRecord) -> str:
    messages = (record.body or {}).get("messages") or []
    return next(str(m["content"]) for m in messages if m.get("role") == "user")


def user_texts(agent: AgentProcess, session_id: str) -> list[str]:
    return [u["content"]["text"] for u in agent.client.of_kind("user_message_chunk", session_id)]


async def run_turns(agent: AgentProcess, session_id: str, numbers: range) -> None:
    for n in numbers:
        response = await agent.prompt(session_id, question(n))
        assert response.stop_reason == "end_turn", n


@pytest.mark.parametrize("capability", [True, False], ids=["compaction capability", "no capability"])
async def test_a_long_session_compacts_again_and_again_and_reloads_compacted(tmp_path: Path, capability: bool) -> None:
    home = tmp_path / "home"
    async with spawn_agent(tmp_path, scenario(), home=home, models=WINDOW, initialize=False) as agent:
        await agent.initialize(compaction=capability)
        session_id = await agent.new_session()
        await run_turns(agent, session_id, range(1, 19))
        live = agent.client.transcript(session_id)
        records = agent.model_requests()
        turns = turn_requests(agent)
        kinds = agent.client.kinds(session_id)
        meters = agent.client.of_kind("usage_update", session_id)
    assert all(r.outcome == "completed" for r in records), [r.outcome for r in records]  # none over the limit
    assert len(summary_requests(agent)) >= 2
    assert len({_system(r) + str(r.body["tools"]) for r in turns}) == 1  # system prompt and tools never changed
    compacted = [r for r in turns if first_user_text(r).startswith("[This conversation was compacted")]
    assert compacted and SUMMARY in first_user_text(compacted[-1])
    assert [m["size"] for m in meters] == [4_000] * len(meters) and max(m["used"] for m in meters) <= 4_000, meters
    if capability:
        assert len(live["compactions"]) == len(summary_requests(agent))
        assert {c["status"] for c in live["compactions"].values()} == {"completed"}
        assert all(c["summary"][0]["text"].startswith(SUMMARY) for c in live["compactions"].values())
        assert "compaction_summary_chunk" in kinds
    else:
        assert "compaction_update" not in kinds and "compaction_summary_chunk" not in kinds
        notes = [t for t in live["messages"].values() if t.startswith("Compacted the conversation")]
        assert len(notes) == len(summary_requests(agent))
    async with spawn_agent(tmp_path / "second", scenario(), home=home, models=WINDOW, initialize=False) as agent:
        await agent.initialize(compaction=capability)
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(tmp_path / "workspace"), session_id=session_id, mcp_servers=[])
        replay = agent.client.transcript(session_id)
        replayed_users = user_texts(agent, session_id)
        await run_turns(agent, session_id, range(19, 20))
        after_reload = turn_requests(agent)[0]
    assert replay == live  # every message, card and compaction, in its place
    assert replayed_users == [question(n) for n in range(1, 19)]
    assert first_user_text(after_reload).startswith("[This conversation was compacted")


@pytest.mark.parametrize("flavour", ["openai", "anthropic", "ollama", "vllm", "lmstudio", "openrouter", "llamacpp"])
async def test_a_request_refused_as_too_long_is_compacted_for_and_answered(tmp_path: Path, flavour: str) -> None:
    # The model's window is the default 128,000 tokens: only the server knows its limit is 3,000.
    async with spawn_agent(tmp_path, scenario(limit=3_000, flavour=flavour)) as agent:
        session_id = await agent.new_session()
        await run_turns(agent, session_id, range(1, 8))
        records = agent.model_requests()
        text = agent.client.text(session_id)
    refused = [i for i, r in enumerate(records) if r.outcome == "context_exceeded"]
    assert refused, "the session grew past the server's limit"
    for index in refused:  # each refusal: a summary, then the same request again, answered
        summary, retry = records[index + 1], records[index + 2]
        assert MARKER in _system(summary) and summary.outcome == "completed"
        assert retry.outcome == "completed" and first_user_text(retry).startswith("[This conversation was compacted")
        asked = records[index].body["messages"][-1]["content"]
        assert retry.body["messages"][-1]["content"].endswith(asked)  # the same question (after the summary, if first)
    assert "failed" not in text and "⚠" not in text


async def test_compact_with_instructions_and_status_without_a_model_call(tmp_path: Path) -> None:
    agent_config = '\n[agent]\ncompaction_threshold = 0.9\ncompaction_model = "fx:m2"\n'
    async with spawn_agent(tmp_path, scenario(), models=WINDOW, config_extra=agent_config) as agent:
        session_id = await agent.new_session()
        await agent.client.wait_for(lambda: bool(agent.client.of_kind("available_commands_update", session_id)))
        (commands,) = agent.client.of_kind("available_commands_update", session_id)
        await run_turns(agent, session_id, range(1, 3))
        compact = await agent.prompt(session_id, "/compact keep every question number")
        (summary,) = summary_requests(agent)
        requests = len(agent.model_requests())
        before = len(agent.client.updates)
        status = await agent.prompt(session_id, "/status")
        status_text = "".join(
            u["content"]["text"]
            for _, u in agent.client.updates[before:]
            if u["sessionUpdate"] == "agent_message_chunk"
        )
        status_requests = len(agent.model_requests())
        await run_turns(agent, session_id, range(3, 4))
        after = turn_requests(agent)[-1]
    names = {c["name"]: c for c in commands["availableCommands"]}
    assert names["compact"]["input"] == {"hint": "[what the summary should keep]"} and "status" in names
    assert compact.stop_reason == status.stop_reason == "end_turn"
    assert "The user asks the summary to focus on: keep every question number" in str(summary.body["messages"])
    assert summary.body["model"] == "m2"  # [agent] compaction_model
    assert status_requests == requests  # /status asked no model
    for line in ("**Model:** fx:m", "**Mode:** default", "of 4,000 tokens", "compacted above 90% (3,600)"):
        assert line in status_text
    assert "compactions so far: 1" in status_text and "**Cost so far:** unknown" in status_text
    assert f"**Directories:** {tmp_path / 'workspace'}" in status_text
    # After /compact the whole earlier conversation is the summary: the request holds it and the new question.
    messages = [m for m in after.body["messages"] if m["role"] != "system"]
    assert len(messages) == 1 and SUMMARY in messages[0]["content"] and question(3) in messages[0]["content"]


async def test_a_server_killed_while_it_compacts_reloads_the_old_history_and_goes_on(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sent: list[str] = []
    async with spawn_agent(tmp_path, scenario(held=True), home=home, models=WINDOW, initialize=False) as agent:
        await agent.initialize(compaction=True)
        session_id = await agent.new_session()
        async with anyio.create_task_group() as group:

            async def turns() -> None:
                for n in range(1, 19):
                    sent.append(question(n))
                    await agent.prompt(session_id, question(n))

            group.start_soon(turns)
            await agent.client.wait_for(lambda: "compaction_summary_chunk" in agent.client.kinds(), timeout=60)
            agent.process.send_signal(signal.SIGKILL)
            group.cancel_scope.cancel()
    async with spawn_agent(tmp_path / "second", scenario(), home=home, models=WINDOW, initialize=False) as agent:
        await agent.initialize(compaction=True)
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(tmp_path / "workspace"), session_id=session_id, mcp_servers=[])
        replay = agent.client.transcript(session_id)
        replayed = user_texts(agent, session_id)
        await run_turns(agent, session_id, range(100, 101))
        (summary,) = summary_requests(agent)
    assert replay["compactions"] == {}  # the compaction never finished: nothing of it was stored
    assert replayed == sent  # every prompt sent, the interrupted one included
    # The old history was whole: the new compaction summarised it from the first question on.
    assert question(1) in str(summary.body["messages"])


async def test_a_server_killed_after_a_compaction_reloads_compacted_and_a_fork_carries_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with spawn_agent(tmp_path, scenario(), home=home, models=WINDOW) as agent:
        session_id = await agent.new_session()
        await run_turns(agent, session_id, range(1, 10))
        assert summary_requests(agent)
        live = agent.client.transcript(session_id)
        agent.process.send_signal(signal.SIGKILL)
        with anyio.fail_after(10):
            await agent.process.wait()
    workspace = str(tmp_path / "workspace")
    async with spawn_agent(tmp_path / "second", scenario(), home=home, models=WINDOW) as agent:
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=workspace, session_id=session_id, mcp_servers=[])
            replay = agent.client.transcript(session_id)
            fork = (await agent.conn.fork_session(cwd=workspace, session_id=session_id, mcp_servers=[])).session_id
            await agent.conn.load_session(cwd=workspace, session_id=fork, mcp_servers=[])
        forked = agent.client.transcript(fork)
        await run_turns(agent, fork, range(10, 11))
        await run_turns(agent, session_id, range(11, 12))
        in_fork, in_parent = turn_requests(agent)
    assert replay == live
    assert forked["messages"] == live["messages"]  # the fork shows the whole history, the compaction note in it
    for request, last in ((in_fork, 10), (in_parent, 11)):
        assert SUMMARY in first_user_text(request)
        assert request.body["messages"][-1]["content"] == question(last)
        assert question(1) not in str(request.body["messages"])


async def test_cancel_while_the_summary_is_written_keeps_the_old_history(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, scenario(held=True), models=WINDOW, initialize=False) as agent:
        await agent.initialize(compaction=True)
        session_id = await agent.new_session()
        results: list[Any] = []

        async def turns() -> None:
            for n in range(1, 19):
                results.append(await agent.prompt(session_id, question(n)))
                if results[-1].stop_reason == "cancelled":
                    return

        async with anyio.create_task_group() as group:
            group.start_soon(turns)
            await agent.client.wait_for(lambda: "compaction_summary_chunk" in agent.client.kinds(), timeout=60)
            await agent.conn.cancel(session_id=session_id)
        compactions = agent.client.transcript(session_id)["compactions"]
        await run_turns(agent, session_id, range(50, 51))
        first, second = summary_requests(agent)
        final = agent.client.transcript(session_id)["compactions"]
    assert results[-1].stop_reason == "cancelled"
    assert [c["status"] for c in compactions.values()] == ["cancelled"]
    # The history the cancelled compaction would have replaced is still there for the next one to summarise.
    assert question(1) in str(first.body["messages"]) and question(1) in str(second.body["messages"])
    assert sorted(c["status"] for c in final.values()) == ["cancelled", "completed"]


async def test_a_failing_summary_request_drops_the_oldest_turns_and_says_so(tmp_path: Path) -> None:
    failing = scenario(summary={"error": {"status": 400, "message": "summaries are switched off"}})
    async with spawn_agent(tmp_path, failing, models=WINDOW) as agent:
        session_id = await agent.new_session()
        await run_turns(agent, session_id, range(1, 10))
        text = agent.client.text(session_id)
        turns = turn_requests(agent)
    assert "so they were dropped: the model no longer sees them" in text
    assert "summaries are switched off" in text
    dropped = [r for r in turns if first_user_text(r).startswith("[The ")]
    assert dropped and "earliest messages of this conversation were dropped" in first_user_text(dropped[0])


async def test_a_tool_result_larger_than_the_window_is_cut_to_a_stub(tmp_path: Path) -> None:
    big = {
        "name": "big-read",
        "context_limit": {"tokens": 4_000},
        "responses": [
            {"match": {"system_contains": MARKER}, "repeat": True, "steps": [{"text": SUMMARY}]},
            {
                "match": {"last_message_contains": "read the log"},
                "steps": [{"tool_call": {"id": "call_read", "name": "read_file", "arguments": {"path": "big.log"}}}],
            },
            {"repeat": True, "steps": [{"text": "The log is long and all lines say ok."}]},
        ],
    }
    async with spawn_agent(tmp_path, big, models=WINDOW) as agent:
        (agent.workspace / "big.log").write_text("".join(f"line {n:05d}: ok\n" for n in range(3_000)))
        session_id = await agent.new_session()
        await run_turns(agent, session_id, range(1, 3))
        response = await agent.prompt(session_id, "Please read the log")
        card = agent.client.cards(session_id)["call_read"]
        records = agent.model_requests()
    assert response.stop_reason == "end_turn"
    assert all(r.outcome == "completed" for r in records)
    after = records[-1].body["messages"]
    (result,) = [m for m in after if m["role"] == "tool"]
    assert result["tool_call_id"] == "call_read"
    assert result["content"].startswith("[This read_file result was cut to fit the context window")
    assert "line 00000: ok" in result["content"] and "line 01999: ok" not in result["content"]
    assert card["status"] == "completed"
