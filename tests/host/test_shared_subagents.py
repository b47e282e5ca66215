"""Subagents in a session host: a second front door that loads the parent while its child works catches up with the
child's traffic so far (once, in place, after the child's announcement), then follows it live, and may cancel that
child alone. Both front doors advertise ``subagents``; every frame is checked against the ACP schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes.host_process import FrontDoor, shared_home

pytestmark = pytest.mark.anyio

CHILD = "You are a subagent"
SCENARIO: dict[str, Any] = {
    "name": "shared-subagents",
    "responses": [
        {
            "match": {"system_contains": CHILD, "last_message_contains": "TASK-H"},
            "steps": [{"tool_call": {"id": "ch1", "name": "read_file", "arguments": {"path": "a.txt"}}}],
        },
        {
            "match": {"system_contains": CHILD, "last_message_contains": "alpha"},
            "hold_after_chunks": 1,
            "steps": [{"text": "Half way there"}],
        },
        {
            "match": {"last_message_contains": "hold on"},
            "steps": [
                {"tool_call": {"id": "d1", "name": "delegate", "arguments": {"task": "TASK-H", "title": "Held"}}}
            ],
        },
        {"match": {"last_message_contains": "cancelled by the user"}, "steps": [{"text": "The child was stopped."}]},
    ],
}


def updates(door: FrontDoor, session_id: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for direction, message in door.frames.frames:
        if direction == "to_client" and message.get("method") == "session/update":
            params = message["params"]
            if session_id is None or params["sessionId"] == session_id:
                found.append((params["sessionId"], params["update"]))
    return found


def child_of(door: FrontDoor, parent: str) -> str | None:
    return next((u["sessionId"] for _, u in updates(door, parent) if u["sessionUpdate"] == "subagent_update"), None)


def child_said(door: FrontDoor, child: str) -> str:
    return "".join(u["content"]["text"] for _, u in updates(door, child) if u["sessionUpdate"] == "agent_message_chunk")


async def test_a_second_front_door_catches_up_with_a_running_child_and_cancels_it(tmp_path: Path) -> None:
    async with shared_home(tmp_path, SCENARIO) as shared:
        (shared.workspace / "a.txt").write_text("alpha\n")
        await shared.start_host()
        responses: list[Any] = []
        async with shared.front_door(initialize=False) as first:
            await first.request("initialize", {"protocolVersion": 1, "clientCapabilities": {"subagents": {}}})
            opened = await first.request("session/new", {"cwd": str(shared.workspace), "mcpServers": []})
            session_id = opened["result"]["sessionId"]
            async with anyio.create_task_group() as group:

                async def prompt() -> None:
                    responses.append(await first.prompt(session_id, "Please hold on"))

                group.start_soon(prompt)

                def child_streaming() -> bool:
                    child = child_of(first, session_id)
                    return child is not None and "Half way" in child_said(first, child)

                await first.frames.wait_for(child_streaming, timeout=60)
                child = child_of(first, session_id)
                assert child is not None
                async with shared.front_door(initialize=False) as second:
                    await second.request("initialize", {"protocolVersion": 1, "clientCapabilities": {"subagents": {}}})
                    loaded = await second.request(
                        "session/load", {"sessionId": session_id, "cwd": str(shared.workspace), "mcpServers": []}
                    )
                    caught_up = updates(second)
                    await second.conn.cancel(session_id=child)
                    await second.frames.wait_for(
                        lambda: any(
                            u.get("toolCallId") == "d1" and u.get("status") == "failed" for _, u in updates(second)
                        ),
                        timeout=60,
                    )
                    await second.frames.wait_for(
                        lambda: "The child was stopped." in child_said(second, session_id), timeout=60
                    )
                    seen = updates(second)
    assert "error" not in loaded
    assert child is not None
    assert responses[0].stop_reason == "end_turn", "the parent went on after its child was cancelled"
    announce = next(i for i, (s, u) in enumerate(caught_up) if s == session_id and u.get("sessionId") == child)
    first_child = next(i for i, (s, _) in enumerate(caught_up) if s == child)
    assert announce < first_child, "the catch-up announces the child before its traffic"
    kinds = [u["sessionUpdate"] for s, u in seen if s == child]
    assert kinds.count("session_message") == 1, "the child's task, once"
    assert child_said(second, child) == "Half way there", "the streamed tail, once, no gap"
    cards = [u for s, u in seen if s == child and u.get("toolCallId") == "ch1" and u.get("status") == "completed"]
    assert len(cards) == 1
    ended = [u for s, u in seen if s == session_id and u.get("state", {}).get("state") == "idle"]
    assert ended[-1]["state"]["stopReason"] == "cancelled"
