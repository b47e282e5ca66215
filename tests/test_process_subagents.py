"""Subagents through the real process: ``delegate`` calls whose children are sessions of their own, with the
scripted model answering the parent and each child (a child's requests carry the subagent system prompt).

With ``clientCapabilities.subagents`` the client gets each child announced on the parent (``subagent_update``)
before any of its traffic, then the child's own updates under its id, and its state as it ends; without it, no
frame naming a child at all, and progress lines on the ``delegate`` card instead. Every frame is checked against
the ACP 2.4.0 schema (the unstable one for the child shapes) when the agent exits.
"""

from __future__ import annotations

import itertools
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.mcp_server import read_journal, stdio_spec
from tests.fakes.acp_client import PermissionCall
from tests.fakes.agent_process import AgentProcess, spawn_agent

pytestmark = pytest.mark.anyio

CHILD = "You are a subagent"
"""What every child's system prompt has and no parent's does: how the scripted model tells them apart."""
READ_ONLY_TOOLS = ["read_file", "list_files", "search_files", "update_plan"]


def child(marker: str, steps: list[dict[str, Any]], *, last: bool = True, **options: Any) -> dict[str, Any]:
    """A response for a child whose task (``last=False``: whose conversation) contains ``marker``."""
    key = "last_message_contains" if last else "any_message_contains"
    return {"match": {"system_contains": CHILD, key: marker}, "steps": steps, **options}


def parent(marker: str, steps: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    return {"match": {"last_message_contains": marker}, "steps": steps, **options}


def delegate(call_id: str, task: str, title: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": call_id, "name": "delegate", "arguments": {"task": task, "title": title, **arguments}}}


def read(call_id: str, path: str) -> dict[str, Any]:
    return {"tool_call": {"id": call_id, "name": "read_file", "arguments": {"path": path}}}


def text(value: str) -> dict[str, Any]:
    return {"text": value}


PARENT_USAGE = {"input_tokens": 1000, "output_tokens": 10}
CHILD_USAGE = {"input_tokens": 100, "output_tokens": 1}
STREAMED: dict[str, Any] = {"chunk_size": 4, "chunk_delay_ms": 5, "usage": CHILD_USAGE}
TWO_CHILDREN: dict[str, Any] = {
    "name": "two-children",
    "responses": [
        child("TASK-A", [text("Looking at a."), read("ca1", "a.txt")], usage=CHILD_USAGE),
        # A's report waits for B's first request: run side by side, B has asked by then; run one after the
        # other, B cannot ask before A is done, and A answers after the server's wait.
        child(
            "alpha",
            [text("REPORT-A: a.txt says alpha, and that is all it says.")],
            after_request={"system_contains": CHILD, "last_message_contains": "TASK-B"},
            **STREAMED,
        ),
        child("TASK-B", [text("Looking at b."), read("cb1", "b.txt")], usage=CHILD_USAGE),
        child("beta", [text("REPORT-B: b.txt says beta, and that is all it says.")], **STREAMED),
        parent(
            "go delegate",
            [delegate("d1", "TASK-A: what does a.txt say?", "Read A"), delegate("d2", "TASK-B", "Read B")],
            usage=PARENT_USAGE,
        ),
        parent("REPORT-", [text("Both reports are in.")], usage=PARENT_USAGE),
    ],
}


async def initialize(agent: AgentProcess, **capabilities: Any) -> None:
    """``initialize`` as sent (the SDK's own model drops ``subagents``, which it does not know)."""
    await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})


async def capable(agent: AgentProcess) -> None:
    await initialize(agent, subagents={})


def write_files(agent: AgentProcess) -> None:
    (agent.workspace / "a.txt").write_text("alpha\n")
    (agent.workspace / "b.txt").write_text("beta\n")


def announced(agent: AgentProcess, parent_id: str) -> list[str]:
    """The children announced on ``parent_id``, in the order they first were."""
    found: list[str] = []
    for _, update in agent.updates(parent_id):
        if update["sessionUpdate"] == "subagent_update" and update["sessionId"] not in found:
            found.append(update["sessionId"])
    return found


def titled(agent: AgentProcess, parent_id: str, title: str) -> str:
    """The child announced on ``parent_id`` with ``title`` (children that run together start in any order)."""
    found: str = next(
        u["sessionId"]
        for _, u in agent.updates(parent_id)
        if u["sessionUpdate"] == "subagent_update" and u.get("title") == title
    )
    return found


def positions(agent: AgentProcess, session_id: str) -> Iterator[int]:
    """Where, in all the updates sent, those of ``session_id`` are."""
    return (i for i, (s, _) in enumerate(agent.updates()) if s == session_id)


def children_requests(agent: AgentProcess) -> list[Any]:
    return [r for r in agent.model_requests() if CHILD in str(r.body.get("messages", [{}])[0].get("content"))]


def card(agent: AgentProcess, session_id: str, call_id: str) -> dict[str, Any]:
    """One tool card as the editor ends up showing it (its frames merged, as sent)."""
    merged: dict[str, Any] = {}
    for _, update in agent.updates(session_id):
        if update["sessionUpdate"] in ("tool_call", "tool_call_update") and update["toolCallId"] == call_id:
            merged.update({k: v for k, v in update.items() if k != "sessionUpdate"})
    return merged


def card_text(merged: dict[str, Any]) -> str:
    return "".join(item["content"].get("text", "") for item in merged.get("content", []) if item["type"] == "content")


def parent_ids(agent: AgentProcess) -> set[str]:
    return {s for s, u in agent.updates() if u["sessionUpdate"] == "available_commands_update"}


# -- parallel children, with and without the capability ---------------------------------------------------------


async def test_without_the_capability_children_show_as_progress_lines_and_no_frame_names_a_child(
    tmp_path: Path,
) -> None:
    async with spawn_agent(tmp_path, TWO_CHILDREN) as agent:
        write_files(agent)
        session_id = await agent.new_session()
        response = await agent.prompt(session_id, "Please go delegate")
        live = agent.updates()
        cards = {call: card(agent, session_id, call) for call in ("d1", "d2")}
        agent.client.clear()
        agent.frames.frames.clear()
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(agent.workspace), session_id=session_id, mcp_servers=[])
        replayed = agent.updates()
        children = children_requests(agent)
        last = agent.model_requests()[-1]
        listed = await agent.conn.list_sessions()
    assert response.stop_reason == "end_turn"
    assert {s for s, _ in live} == {session_id}, "no frame named a child"
    assert {s for s, _ in replayed} == {session_id}
    assert "subagent_update" not in [u["sessionUpdate"] for _, u in live + replayed]
    assert [cards[c]["status"] for c in ("d1", "d2")] == ["completed", "completed"]
    assert card_text(cards["d1"]).startswith("REPORT-A")
    lines = [card_text(u) for _, u in live if u.get("toolCallId") == "d1" and u.get("status") == "in_progress"]
    assert "• Read a.txt" in lines, "a progress line per step of the child"
    replayed_lines = [card_text(u) for _, u in replayed if u.get("toolCallId") == "d2" and "content" in u]
    assert replayed_lines[0] == "• Read b.txt", "a replay shows the progress lines, then the report"
    assert replayed_lines[-1].startswith("REPORT-B")
    assert len(children) == 4
    a_finished = max(r.finished_monotonic or 0 for r in children if "TASK-A" in str(r.body))
    b_started = min(r.received_monotonic for r in children if "TASK-B" in str(r.body))
    assert b_started < a_finished, "the children ran side by side"
    for record in children:
        offered = sorted(t["function"]["name"] for t in record.body["tools"])
        assert offered == sorted(READ_ONLY_TOOLS), "an explore child has read-only tools and cannot delegate"
    results = [m["content"] for m in last.body["messages"] if m["role"] == "tool"]
    assert [r.split(":")[0] for r in results] == ["REPORT-A", "REPORT-B"]
    assert (response.usage.input_tokens, response.usage.output_tokens) == (2 * 1000 + 4 * 100, 2 * 10 + 4 * 1), (
        "what the prompt cost includes its children's work"
    )
    assert [s.session_id for s in listed.sessions] == [session_id], "children are reached through their parent"


async def test_with_the_capability_each_child_is_announced_then_streams_under_its_own_id(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, TWO_CHILDREN, initialize=False) as agent:
        write_files(agent)
        await capable(agent)
        session_id = await agent.new_session()
        response = await agent.prompt(session_id, "Please go delegate")
        live = agent.updates()
        kids = [titled(agent, session_id, "Read A"), titled(agent, session_id, "Read B")]
        first_child_frame = {kid: next(positions(agent, kid)) for kid in kids}
        agent.frames.frames.clear()
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(agent.workspace), session_id=session_id, mcp_servers=[])
        replayed = agent.updates()
        replay_positions = {kid: list(positions(agent, kid)) for kid in kids}
        replay_announced = {
            kid: next(i for i, (s, u) in enumerate(replayed) if u.get("sessionId") == kid and s == session_id)
            for kid in kids
        }
    assert response.stop_reason == "end_turn"
    assert set(announced(agent, session_id)) == set(kids)
    for kid in kids:
        announce = next(
            i
            for i, (s, u) in enumerate(live)
            if s == session_id and u["sessionUpdate"] == "subagent_update" and u["sessionId"] == kid
        )
        assert announce < first_child_frame[kid], "announced on the parent before any of its traffic"
        first, chunk = [u for s, u in live if s == kid][:2]
        assert live[first_child_frame[kid]][1] is first
        assert first["sessionUpdate"] == "session_message" and first["senderSessionId"] == session_id
        assert chunk["sessionUpdate"] == "session_message_chunk", "the task's content, as a chunk of the message"
        assert chunk["messageId"] == first["messageId"] and chunk["content"]["text"].startswith("TASK-")
    updates_a = [u for s, u in live if s == kids[0]]
    updates_b = [u for s, u in live if s == kids[1]]
    assert [u["sessionUpdate"] for u in updates_a].count("tool_call") == 1
    assert "".join(u["content"]["text"] for u in updates_a if u["sessionUpdate"] == "agent_message_chunk").endswith(
        "REPORT-A: a.txt says alpha, and that is all it says."
    )
    order = [s for s, _ in live if s in kids]
    switches = sum(1 for x, y in itertools.pairwise(order) if x != y)
    assert switches >= 3, "the children's streams interleave"
    states = [u for s, u in live if s == session_id and u["sessionUpdate"] == "subagent_update"]
    running = [u for u in states if u.get("state") == {"state": "running"} and "title" in u]
    assert {u["title"] for u in running} == {"Read A", "Read B"}
    assert all(u["capabilities"] == {"cancel": {}} for u in running)
    ended = [u for u in states if u.get("state", {}).get("state") == "idle"]
    assert [u["state"]["stopReason"] for u in ended] == ["end_turn", "end_turn"]
    assert all(u["state"]["usage"]["totalTokens"] > 0 for u in ended)
    links = [u for s, u in live if s == session_id and u.get("_meta", {}).get("hermes", {}).get("session")]
    assert {u["_meta"]["hermes"]["session"]["sessionId"] for u in links} == set(kids), "each card links its child"
    assert updates_b, "the second child streamed too"
    for kid in kids:
        assert replay_announced[kid] < replay_positions[kid][0], "a replay announces each child before its traffic"
    replayed_kinds = [u["sessionUpdate"] for s, u in replayed if s == kids[0]]
    assert replayed_kinds[0] == "session_message"
    assert "tool_call" in replayed_kinds and "agent_message_chunk" in replayed_kinds


# -- permissions --------------------------------------------------------------------------------------------------

WRITER: dict[str, Any] = {
    "name": "writer",
    "responses": [
        child(
            "TASK-W",
            [{"tool_call": {"id": "cw1", "name": "write_file", "arguments": {"path": "notes.txt", "content": "n\n"}}}],
        ),
        child("notes.txt", [text("REPORT-W: wrote notes.txt")], last=False),
        parent("write them", [delegate("d1", "TASK-W: write notes.txt", "Write notes", role="general")]),
        parent(
            "REPORT-W",
            [{"tool_call": {"id": "p1", "name": "write_file", "arguments": {"path": "more.txt", "content": "m\n"}}}],
        ),
        parent("more.txt", [text("Written.")]),
    ],
}


async def test_a_child_asks_on_the_delegate_card_naming_itself_and_always_holds_for_the_parent(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, WRITER) as agent:
        agent.client.answers = ["allow_always"]
        session_id = await agent.new_session()
        response = await agent.prompt(session_id, "Please write them")
        asked = list(agent.client.permissions)
        result = card(agent, session_id, "d1")
    assert response.stop_reason == "end_turn"
    assert len(asked) == 1, "the parent's own write in the same scope no longer asks"
    question = asked[0]
    assert question.session_id == session_id and question.tool_call["toolCallId"] == "d1"
    assert question.tool_call["title"].startswith("[Write notes] ")
    assert (agent.workspace / "notes.txt").read_text() == "n\n"
    assert (agent.workspace / "more.txt").read_text() == "m\n"
    assert result["status"] == "completed"


async def test_with_the_capability_a_child_asks_in_its_own_session_and_waits_requiring_action(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, WRITER, initialize=False) as agent:
        await capable(agent)
        agent.client.answers = ["allow_once", "allow_once"]
        session_id = await agent.new_session()
        response = await agent.prompt(session_id, "Please write them")
        kid = announced(agent, session_id)[0]
        asked: list[PermissionCall] = list(agent.client.permissions)
        states = [
            u["state"]["state"]
            for s, u in agent.updates(session_id)
            if u["sessionUpdate"] == "subagent_update" and "state" in u
        ]
    assert response.stop_reason == "end_turn"
    assert asked[0].session_id == kid and asked[0].tool_call["toolCallId"] == "cw1"
    assert asked[0].tool_call["title"].startswith("[Write notes] ")
    assert asked[1].session_id == session_id, "allow once in the child: the parent's write asks again"
    assert states == ["running", "requires_action", "running", "idle"]


# -- budgets and failures -------------------------------------------------------------------------------------------

BUDGET_REPORT = child("budget for this task is used up", [text("PARTIAL: two listings done, nothing else.")])


def budget_scenario(**loop: Any) -> dict[str, Any]:
    listing = {"tool_call": {"name": "list_files", "arguments": {"path": "."}}}
    return {
        "name": "budget",
        "responses": [
            BUDGET_REPORT,
            child("TASK-L", [text("Listing."), listing], last=False, repeat=True, **loop),
            parent("list forever", [delegate("d1", "TASK-L: list everything", "List")]),
            parent("did not finish", [text("The child ran out.")]),
        ],
    }


@pytest.mark.parametrize(
    ("config", "loop", "why"),
    [
        ("subagent_max_requests = 2", {}, "2 model requests"),
        ("subagent_max_tokens = 1000", {"usage": {"input_tokens": 900, "output_tokens": 200}}, "1,000 tokens"),
        ("subagent_timeout_s = 0.5", {"hold_after_chunks": 1}, "0.5 s of wall time"),
    ],
)
async def test_a_child_past_its_budget_reports_what_it_has_and_the_call_fails_with_it(
    tmp_path: Path, config: str, loop: dict[str, Any], why: str
) -> None:
    async with spawn_agent(tmp_path, budget_scenario(**loop), config_extra=f"\n[agent]\n{config}\n") as agent:
        session_id = await agent.new_session()
        response = await agent.prompt(session_id, "Please list forever")
        result = card(agent, session_id, "d1")
        last = agent.model_requests()[-1].body["messages"]
        report_requests = [r for r in children_requests(agent) if "budget for this task" in str(r.body["messages"][-1])]
    assert response.stop_reason == "end_turn", "the parent's turn goes on"
    assert result["status"] == "failed"
    assert f"did not finish: it reached its budget of {why}" in card_text(result)
    assert "PARTIAL: two listings done" in card_text(result)
    assert len(report_requests) == 1 and "tools" not in report_requests[0].body, "the report is written without tools"
    tool_result = next(m for m in last if m["role"] == "tool")
    assert "PARTIAL" in tool_result["content"]


PROVIDER_FAILS: dict[str, Any] = {
    "name": "provider-fails",
    "responses": [
        child("TASK-F", [text("The setting lives in a.txt."), read("cf1", "a.txt")]),
        child("alpha", [], error={"status": 500, "message": "the model service broke"}),
        parent("find it", [delegate("d1", "TASK-F: where is the setting?", "Find")]),
        parent("did not finish", [text("I will look myself.")]),
    ],
}


async def test_a_child_whose_provider_fails_fails_the_call_with_what_it_found(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, PROVIDER_FAILS) as agent:
        write_files(agent)
        session_id = await agent.new_session()
        response = await agent.prompt(session_id, "Please find it")
        result = card(agent, session_id, "d1")
    assert response.stop_reason == "end_turn"
    assert result["status"] == "failed"
    shown = card_text(result)
    assert "its model request failed" in shown and "the model service broke" in shown
    assert "What it found so far:\nThe setting lives in a.txt." in shown
    assert result["rawOutput"]["outcome"] == "failed"


# -- cancel ---------------------------------------------------------------------------------------------------------

SLOW_ECHO = {"tool_call": {"id": "cc1", "name": "mcp__fixture__slow_echo", "arguments": {"text": "c", "seconds": 60}}}
HELD: dict[str, Any] = {
    "name": "held",
    "responses": [
        child("TASK-A", [text("Still working on A for a long while")], hold_after_chunks=1),
        child("TASK-B", [text("REPORT-B: b is fine")]),
        child("TASK-C", [text("Still working on C, waiting for the server"), SLOW_ECHO]),
        parent("hold", [delegate("d1", "TASK-A", "Slow A"), delegate("d2", "TASK-C", "Slow C")]),
        parent("one of each", [delegate("d1", "TASK-A", "Slow A"), delegate("d2", "TASK-B", "Quick B")]),
        parent("REPORT-B", [text("A was cancelled; B reported.")]),
    ],
}


def streaming(agent: AgentProcess, kids: int) -> bool:
    started = {s for s, u in agent.updates() if u["sessionUpdate"] == "agent_message_chunk"} - parent_ids(agent)
    return len(started) >= kids


def echo_running(agent: AgentProcess) -> bool:
    return any(u.get("toolCallId") == "cc1" and u.get("status") == "in_progress" for _, u in agent.updates())


async def test_cancel_of_the_parent_cancels_every_child_and_settles_every_card(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, HELD, initialize=False) as agent:
        await capable(agent)
        session_id = await agent.new_session([stdio_spec("fixture", tmp_path / "journal.jsonl")])
        responses: list[Any] = []
        async with anyio.create_task_group() as group:

            async def prompt() -> None:
                responses.append(await agent.prompt(session_id, "Please hold"))

            group.start_soon(prompt)
            await agent.frames.wait_for(lambda: streaming(agent, 2) and echo_running(agent), timeout=60)
            await agent.conn.cancel(session_id=session_id)
        cards = [card(agent, session_id, call) for call in ("d1", "d2")]
        ends = [
            u["state"]
            for s, u in agent.updates(session_id)
            if u["sessionUpdate"] == "subagent_update" and u.get("state", {}).get("state") == "idle"
        ]
        slow = titled(agent, session_id, "Slow C")
        echo = card(agent, slow, "cc1")
    assert responses[0].stop_reason == "cancelled"
    assert [c["status"] for c in cards] == ["failed", "failed"]
    assert [e["stopReason"] for e in ends] == ["cancelled", "cancelled"]
    assert echo["status"] == "failed", "the child's running call settled too"
    assert card_text(echo).startswith("Cancelled")


async def test_cancel_of_one_child_stops_it_only_and_the_model_reads_why(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, HELD, initialize=False) as agent:
        await capable(agent)
        session_id = await agent.new_session()
        responses: list[Any] = []
        async with anyio.create_task_group() as group:

            async def prompt() -> None:
                responses.append(await agent.prompt(session_id, "Please do one of each"))

            group.start_soon(prompt)
            await agent.frames.wait_for(lambda: streaming(agent, 2), timeout=30)
            slow = next(
                s for s, u in agent.updates() if u["sessionUpdate"] == "agent_message_chunk" and "Still" in str(u)
            )
            await agent.conn.cancel(session_id=slow)
        cards = [card(agent, session_id, call) for call in ("d1", "d2")]
        results = [m["content"] for m in agent.model_requests()[-1].body["messages"] if m["role"] == "tool"]
    assert responses[0].stop_reason == "end_turn", "the parent goes on"
    assert [c["status"] for c in cards] == ["failed", "completed"]
    assert "cancelled by the user" in card_text(cards[0])
    assert "cancelled by the user" in results[0] and results[1].startswith("REPORT-B")


# -- kill -9 --------------------------------------------------------------------------------------------------------

INTERRUPTED: dict[str, Any] = {
    "name": "interrupted",
    "responses": [
        child("TASK-K", [read("ck1", "a.txt")]),
        child("alpha", [text("Half way there")], hold_after_chunks=1),
        parent("start it", [delegate("d1", "TASK-K", "Killed")]),
        parent("What happened", [text("The subagent was interrupted.")]),
    ],
}


async def test_a_server_killed_mid_delegation_replays_every_card_as_stored_and_runs_nothing_again(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    async with spawn_agent(tmp_path, INTERRUPTED, home=home, initialize=False) as agent:
        write_files(agent)
        await capable(agent)
        session_id = await agent.new_session()
        async with anyio.create_task_group() as group:
            group.start_soon(agent.prompt, session_id, "Please start it")
            await agent.frames.wait_for(lambda: streaming(agent, 1), timeout=30)
            agent.process.send_signal(signal.SIGKILL)
            group.cancel_scope.cancel()
        with anyio.fail_after(10):
            await agent.process.wait()
        kid = announced(agent, session_id)[0]
        live_child_read = card(agent, kid, "ck1")
    workspace = tmp_path / "workspace"
    async with spawn_agent(tmp_path / "second", INTERRUPTED, home=home, initialize=False) as agent:
        await capable(agent)
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        requests_after_load = len(agent.model_requests())
        delegated = card(agent, session_id, "d1")
        replayed_read = card(agent, kid, "ck1")
        ended = [u for s, u in agent.updates(session_id) if u["sessionUpdate"] == "subagent_update" and "state" in u][
            -1
        ]
        after = await agent.prompt(session_id, "What happened?")
        history = agent.model_requests()[-1].body["messages"]
    assert requests_after_load == 0, "nothing ran again"
    assert delegated["status"] == "failed" and "outcome unknown" in card_text(delegated)
    assert replayed_read["status"] == live_child_read["status"] == "completed"
    assert replayed_read["content"] == live_child_read["content"], "the child's cards replay as stored"
    assert ended["state"]["stopReason"] == "error" and ended["_meta"]["hermes"]["outcome"] == "unknown"
    assert after.stop_reason == "end_turn"
    assert "outcome unknown" in next(m["content"] for m in history if m["role"] == "tool")


# -- rights and depth -----------------------------------------------------------------------------------------------

TRIES_TO_WRITE: dict[str, Any] = {
    "name": "tries-to-write",
    "responses": [
        child(
            "TASK-R",
            [{"tool_call": {"id": "cr1", "name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}}],
        ),
        child("no tool", [text("REPORT-R: I may not write here.")]),
        parent("look only", [delegate("d1", "TASK-R", "Try", role="general")]),
        parent("REPORT-R", [text("Understood.")]),
    ],
}


@pytest.mark.parametrize("mode", ["read_only", "plan"])
async def test_a_child_of_a_read_only_session_cannot_write_even_as_general(tmp_path: Path, mode: str) -> None:
    async with spawn_agent(tmp_path, TRIES_TO_WRITE) as agent:
        session_id = await agent.new_session()
        await agent.conn.set_session_mode(session_id=session_id, mode_id=mode)
        response = await agent.prompt(session_id, "Please look only")
        offered = [sorted(t["function"]["name"] for t in r.body["tools"]) for r in children_requests(agent)[:1]]
        refusal = children_requests(agent)[1].body["messages"][-1]["content"]
    assert response.stop_reason == "end_turn"
    assert offered == [sorted(READ_ONLY_TOOLS)], "the parent's mode bounds a general child (no plan hand-off)"
    assert "no tool 'write_file' is available now (the session is in read_only mode)" in refusal
    assert not (agent.workspace / "x.txt").exists()


NESTED: dict[str, Any] = {
    "name": "nested",
    "responses": [
        child("TASK-GRAND", [text("REPORT-GRAND: deepest.")]),
        child("TASK-CHILD", [delegate("g1", "TASK-GRAND", "Grandchild")]),
        child("REPORT-GRAND", [text("REPORT-CHILD: my child said deepest.")]),
        child("no tool 'delegate'", [text("REPORT-CHILD: I could not delegate.")]),
        parent("go deep", [delegate("d1", "TASK-CHILD", "Child")]),
        parent("REPORT-CHILD", [text("Done.")]),
    ],
}


async def test_a_child_cannot_delegate_by_default(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, NESTED) as agent:
        session_id = await agent.new_session()
        await agent.prompt(session_id, "Please go deep")
        first = children_requests(agent)[0]
        result = card(agent, session_id, "d1")
    assert "delegate" not in [t["function"]["name"] for t in first.body["tools"]]
    assert "You cannot delegate further." in first.body["messages"][0]["content"]
    assert card_text(result) == "REPORT-CHILD: I could not delegate."


async def test_with_depth_two_a_grandchild_is_announced_on_its_own_parent(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, NESTED, initialize=False, config_extra="\n[agent]\nsubagent_depth = 2\n") as agent:
        await capable(agent)
        session_id = await agent.new_session()
        await agent.prompt(session_id, "Please go deep")
        kid = announced(agent, session_id)[0]
        grandchildren = announced(agent, kid)
        grand_text = "".join(
            u["content"]["text"]
            for _, u in agent.updates(grandchildren[0])
            if u["sessionUpdate"] == "agent_message_chunk"
        )
        result = card(agent, session_id, "d1")
    assert len(grandchildren) == 1
    assert grand_text == "REPORT-GRAND: deepest."
    assert card_text(result) == "REPORT-CHILD: my child said deepest."


# -- load, fork, list, status ---------------------------------------------------------------------------------------

MANY = 20
MANY_CHILDREN: dict[str, Any] = {
    "name": "many",
    "responses": [
        child("TASK-", [text("REPORT: checked.")], repeat=True),
        parent("many", [delegate(f"d{i}", f"TASK-{i}", f"Part {i}") for i in range(MANY)]),
        parent("REPORT", [text("All parts checked.")]),
    ],
}


async def test_a_parent_with_twenty_children_runs_at_most_max_subagents_and_replays_each_in_place(
    tmp_path: Path,
) -> None:
    config = '\n[agent]\nmax_subagents = 3\nsubagent_model = "fx:m2"\n'
    async with spawn_agent(tmp_path, MANY_CHILDREN, initialize=False, config_extra=config) as agent:
        await capable(agent)
        session_id = await agent.new_session()
        response = await agent.prompt(session_id, "Please check many parts")
        kids = announced(agent, session_id)
        spans = [(r.received_monotonic, r.finished_monotonic or 0) for r in children_requests(agent)]
        models = {r.body["model"] for r in children_requests(agent)}
        agent.frames.frames.clear()
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(agent.workspace), session_id=session_id, mcp_servers=[])
        replayed = agent.updates()
    assert response.stop_reason == "end_turn"
    assert len(kids) == MANY
    at_once = max(sum(1 for start, end in spans if start <= moment < end) for moment, _ in spans)
    assert at_once <= 3, "[agent] max_subagents bounds the children that run at once"
    assert models == {"m2"}, "the children run on [agent] subagent_model"
    order: list[str] = []
    for s, _ in replayed:
        if s != session_id and (not order or order[-1] != s):
            order.append(s)
    assert order == kids, "each child's traffic replays in one piece, in the order they started"


async def test_list_fork_and_prompts_treat_children_as_their_parent_s(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, TWO_CHILDREN, initialize=False) as agent:
        write_files(agent)
        await capable(agent)
        session_id = await agent.new_session()
        await agent.prompt(session_id, "Please go delegate")
        kids = announced(agent, session_id)
        default = await agent.request("session/list", {})
        with_children = await agent.request("session/list", {"_meta": {"hermes": {"subagents": True}}})
        fork = await agent.request("session/fork", {"sessionId": session_id, "cwd": str(agent.workspace)})
        after_fork = await agent.request("session/list", {"_meta": {"hermes": {"subagents": True}}})
        refused_fork = await raw_error(agent, "session/fork", {"sessionId": kids[0], "cwd": str(agent.workspace)})
        await agent.request("session/load", {"sessionId": kids[0], "cwd": str(agent.workspace), "mcpServers": []})
        refused_prompt = await raw_error(
            agent, "session/prompt", {"sessionId": kids[0], "prompt": [{"type": "text", "text": "hi"}]}
        )
    assert [s["sessionId"] for s in default["sessions"]] == [session_id]
    listed = {s["sessionId"]: s for s in with_children["sessions"]}
    assert set(listed) == {session_id, *kids}
    assert all(listed[k]["_meta"]["hermes"]["parentSessionId"] == session_id for k in kids)
    assert len(after_fork["sessions"]) == len(with_children["sessions"]) + 1, "a fork copies no child"
    assert fork["sessionId"] not in kids
    assert refused_fork["code"] == -32602 and "is a subagent of session" in refused_fork["message"]
    assert refused_prompt["code"] == -32602 and "takes tasks from its parent only" in refused_prompt["message"]


async def raw_error(agent: AgentProcess, method: str, params: dict[str, Any]) -> dict[str, Any]:
    try:
        await agent.request(method, params)
    except AssertionError as exc:
        error = exc.args[0]
        assert isinstance(error, dict)
        return error
    raise AssertionError(f"{method} succeeded")


PRICED = '["m2", { id = "m", input_price = 1.0, output_price = 2.0 }]'


async def test_status_shows_each_child_s_tokens_and_cost_and_their_total(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, TWO_CHILDREN, models=PRICED) as agent:
        write_files(agent)
        session_id = await agent.new_session()
        await agent.prompt(session_id, "Please go delegate")
        agent.client.clear()
        await agent.prompt(session_id, "/status")
        status = agent.client.text(session_id)
    assert "**Subagents:** 2" in status
    assert "- Read A (completed, fx:m): " in status and "- Read B (completed, fx:m): " in status
    assert "- all subagents: " in status
    assert status.count("$") >= 4, "each child's cost, their total and the session's"
    assert "(subagents included)" in status


ECHO = "mcp__fixture__echo"
MCP_CHILD: dict[str, Any] = {
    "name": "mcp-child",
    "responses": [
        child("TASK-M", [{"tool_call": {"id": "cm1", "name": ECHO, "arguments": {"text": "from the child"}}}]),
        child("from the child", [text("REPORT-M: the server echoed.")]),
        parent("ask the server", [delegate("d1", "TASK-M", "Echo")]),
        parent("REPORT-M", [text("Done.")]),
    ],
}


async def test_a_child_uses_its_parent_s_mcp_connection_and_only_its_read_only_tools(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    async with spawn_agent(tmp_path, MCP_CHILD) as agent:
        session_id = await agent.new_session([stdio_spec("fixture", journal)])
        response = await agent.prompt(session_id, "Please ask the server")
        offered = agent.offered_tools()
        view = read_journal(journal)
    assert response.stop_reason == "end_turn"
    assert "mcp__fixture__add_note" in offered[0], "the parent has the mutating tool"
    child_tools = offered[1]
    assert ECHO in child_tools and "mcp__fixture__add_note" not in child_tools, "an explore child reads only"
    assert view.count("start") == 1, "the child used the parent's connection: no second server"
    assert [c["arguments"]["text"] for c in view.calls("echo")] == ["from the child"]


OUTSIDE: dict[str, Any] = {
    "name": "outside",
    "responses": [
        parent("look outside", [delegate("d1", "TASK-O", "Outside", focus=["/etc"])]),
        parent("outside the session's directories", [text("I will stay inside.")]),
    ],
}


async def test_a_focus_outside_the_session_s_directories_is_refused_and_no_child_starts(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, OUTSIDE) as agent:
        session_id = await agent.new_session()
        response = await agent.prompt(session_id, "Please look outside")
        result = card(agent, session_id, "d1")
        listed = await agent.request("session/list", {"_meta": {"hermes": {"subagents": True}}})
    assert response.stop_reason == "end_turn"
    assert result["status"] == "failed" and "a subagent cannot go there" in card_text(result)
    assert not children_requests(agent)
    assert len(listed["sessions"]) == 1
