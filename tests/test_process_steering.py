"""Steering and the prompt queue through the real ``python -m hermes_acp`` process (docs/architecture.md §6.9): a
steering message and a queued prompt are stored when they arrive, so after a kill -9 the reloaded session reports
both as not applied / not run instead of losing them; the queue is visible (``/status`` answers at once during a
turn, ``session/list`` has it in ``_meta``); a cancel reports the queued prompt as not run."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from hermes_acp.core import InputDropped
from hermes_acp.storage.sqlite import SqliteSessionStore
from tests.fakes.agent_process import AgentProcess, spawn_agent

pytestmark = pytest.mark.anyio

HELD: dict[str, Any] = {
    "name": "held-answer",
    "responses": [
        {
            "match": {"last_message_contains": "long job"},
            "steps": [{"text": "Working on it, slowly."}],
            "hold_after_chunks": 1,
        },
        {"repeat": True, "steps": [{"text": "Fine."}]},
    ],
}


AFTER: dict[str, Any] = {"name": "after", "responses": [{"repeat": True, "steps": [{"text": "Nothing ran."}]}]}


def _steering(session_id: str, text: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


def _chunk_seen(agent: AgentProcess, session_id: str) -> bool:
    return bool(agent.client.of_kind("agent_message_chunk", session_id))


async def _dropped(agent: AgentProcess, session_id: str) -> list[InputDropped]:
    store = await SqliteSessionStore.open(agent.home / "state.db")
    try:
        return [s.event for s in await store.load_events(session_id) if isinstance(s.event, InputDropped)]
    finally:
        await store.aclose()


async def test_a_steering_message_and_a_queued_prompt_outlive_a_kill_as_reports_of_what_did_not_run(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    async with spawn_agent(tmp_path, HELD, home=home) as agent:
        session_id = await agent.new_session()
        async with anyio.create_task_group() as group:
            group.start_soon(agent.prompt, session_id, "Please do the long job")
            await agent.client.wait_for(lambda: _chunk_seen(agent, session_id), timeout=30)
            group.start_soon(agent.prompt, session_id, "Then tidy up")
            await anyio.wait_all_tasks_blocked()  # its frame is written before the steering request's
            answer = await agent.request("_session/steering", _steering(session_id, "Use tabs, not spaces"))
            agent.process.send_signal(signal.SIGKILL)
            group.cancel_scope.cancel()
        with anyio.fail_after(10):
            await agent.process.wait()
    assert answer == {"outcome": "injected"}
    async with spawn_agent(tmp_path / "second", AFTER, home=home) as agent:
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(agent.workspace), session_id=session_id, mcp_servers=[])
        replayed = agent.client.text(session_id)
        dropped = await _dropped(agent, session_id)
        after = await agent.prompt(session_id, "What happened?")
        sent = str(agent.model_requests()[-1].body["messages"])
    assert "⚠ Queued prompt not run: the server stopped before its turn came. It said: «Then tidy up»" in replayed
    assert (
        "⚠ Steering message not applied: the server stopped before the turn reached a point where it could take it."
        " It said: «Use tabs, not spaces»" in replayed
    )
    assert sorted(d.input_kind for d in dropped) == ["prompt", "steering"]
    assert after.stop_reason == "end_turn"
    assert "Use tabs" not in sent and "tidy up" not in sent, "reported, never applied behind the user's back"


async def test_the_queue_is_visible_while_a_turn_runs_and_a_cancel_reports_what_did_not_run(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, HELD) as agent:
        session_id = await agent.new_session()
        results: dict[str, Any] = {}

        async def prompt(key: str, text: str) -> None:
            results[key] = await agent.prompt(session_id, text)

        async with anyio.create_task_group() as group:
            group.start_soon(prompt, "running", "Please do the long job")
            await agent.client.wait_for(lambda: _chunk_seen(agent, session_id), timeout=30)
            group.start_soon(prompt, "queued", "Then write the changelog")
            await anyio.wait_all_tasks_blocked()  # its frame is written (the agent queues it before the next)
            listed = await agent.request("session/list", {})
            status = await agent.prompt(session_id, "/status")
            await agent.conn.cancel(session_id=session_id)
        steer_idle = await agent.request(
            "_session/steering",
            {**_steering(session_id, "too late"), "_meta": {"steering": {"idleBehavior": "promptRequired"}}},
        )
        dropped = await _dropped(agent, session_id)
    (entry,) = [s for s in listed["sessions"] if s["sessionId"] == session_id]
    queue = entry["_meta"]["hermes"]["queue"]
    assert [(q["kind"], q["text"]) for q in queue] == [("prompt", "Then write the changelog")]
    assert status.stop_reason == "end_turn", "answered at once, not after the turn"
    shown = agent.client.text(session_id)
    assert "**Queue:**\n1. prompt: «Then write the changelog»" in shown
    assert results["running"].stop_reason == results["queued"].stop_reason == "cancelled"
    assert steer_idle == {"outcome": "promptRequired", "reason": "noRunningTurn"}
    assert [(d.input_kind, d.text) for d in dropped] == [
        (
            "prompt",
            "⚠ Queued prompt not run: it was cancelled before its turn came. It said: «Then write the changelog»",
        )
    ]
