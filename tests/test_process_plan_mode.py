"""Plan mode through the real process: planning offers read-only tools and the hand-off; "Ready to code?" answered
"manually approve edits" switches the session to ``default`` in the middle of the turn, the next write asks, and a
new process loads the session in that mode with the hand-off's card and the approved plan replayed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes.acp_client import RecordingClient
from tests.fakes.agent_process import spawn_agent

pytestmark = pytest.mark.anyio

PLAN = "1. Write hello.txt.\n2. Read it back."
SCENARIO: dict[str, Any] = {
    "name": "plan-then-code",
    "responses": [
        {
            "match": {"last_message_contains": "Plan it"},
            "steps": [
                {"text": "Here is my plan."},
                {"tool_call": {"id": "h1", "name": "exit_plan_mode", "arguments": {"plan": PLAN}}},
            ],
        },
        {
            "match": {"last_message_contains": "approved"},
            "steps": [
                {"tool_call": {"id": "w1", "name": "write_file", "arguments": {"path": "hello.txt", "content": "hi"}}}
            ],
        },
        {"match": {"last_message_contains": "hello.txt"}, "steps": [{"text": "Written."}]},
    ],
}


async def test_the_hand_off_switches_the_mode_mid_turn_and_a_reload_keeps_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    client = RecordingClient(answers=["default", "allow_once"])
    async with spawn_agent(tmp_path / "first", SCENARIO, home=home, client=client) as agent:
        session_id = await agent.new_session()
        with anyio.fail_after(30):
            await agent.conn.set_session_mode(session_id=session_id, mode_id="plan")
        response = await agent.prompt(session_id, "Plan it, then do it.")
        tools = agent.offered_tools()
        asked = [(p.tool_call["title"], [o["optionId"] for o in p.options]) for p in client.permissions]
        live_cards = client.cards(session_id)
        workspace = agent.workspace
    async with spawn_agent(tmp_path / "second", SCENARIO, home=home) as agent:
        with anyio.fail_after(30):
            loaded = await agent.conn.load_session(cwd=str(workspace), mcp_servers=[], session_id=session_id)
        replayed = agent.client.cards(session_id)

    assert response.stop_reason == "end_turn"
    assert "exit_plan_mode" in tools[0] and "write_file" not in tools[0] and "terminal" not in tools[0]
    assert "write_file" in tools[1] and "exit_plan_mode" not in tools[1]
    assert asked[0] == ("Ready to code?", ["accept_edits", "default", "keep_planning"])
    assert asked[1][0].startswith("Write"), "in default mode the write asks"
    assert (workspace / "hello.txt").read_text() == "hi"
    assert loaded.modes is not None and loaded.modes.current_mode_id == "default"
    assert replayed["h1"]["status"] == live_cards["h1"]["status"] == "completed"
    assert replayed["h1"]["content"] == live_cards["h1"]["content"]
