"""Skills through the real process: a project skill and a global one are listed with the first commands after
``session/new``, ``/name args`` sends the skill with its arguments, the model loads the other with ``load_skill``
(listed in its system prompt), and a skill linked from outside the project is refused."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.commands.test_skills import write_skill
from tests.fakes.agent_process import spawn_agent

pytestmark = pytest.mark.anyio

SCENARIO: dict[str, Any] = {
    "name": "skills",
    "responses": [
        {"match": {"last_message_contains": "Check in to "}, "steps": [{"text": "Checked in."}]},
        {
            "match": {"last_message_contains": "standup"},
            "steps": [{"tool_call": {"id": "l1", "name": "load_skill", "arguments": {"name": "standup"}}}],
        },
        {"match": {"last_message_contains": "Say what you did"}, "steps": [{"text": "Standup done."}]},
    ],
}


async def test_project_and_global_skills_run_as_commands_and_load_as_tools(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_skill(home / "skills", "standup", "Run a standup.", body="Say what you did yesterday.")
    workspace = tmp_path / "workspace"
    write_skill(workspace / ".agents" / "skills", "checkin", "Check in.", body="Check in to $ARGUMENTS.")
    outside = write_skill(tmp_path / "elsewhere", "stolen", "Not ours.")
    (workspace / ".claude" / "skills").mkdir(parents=True)
    os.symlink(outside.parent, workspace / ".claude" / "skills" / "stolen")
    async with spawn_agent(tmp_path, SCENARIO, home=home) as agent:
        session_id = await agent.new_session()
        await agent.client.wait_for(lambda: bool(agent.client.of_kind("available_commands_update", session_id)))
        listed = [
            c["name"] for c in agent.client.of_kind("available_commands_update", session_id)[0]["availableCommands"]
        ]
        with anyio.fail_after(30):
            checked = await agent.prompt(session_id, "/checkin the office")
            standup = await agent.prompt(session_id, "do the standup")
        requests = agent.model_requests()
        text = agent.client.text(session_id)

    assert {"checkin", "standup"} <= set(listed) and "stolen" not in listed
    assert (checked.stop_reason, standup.stop_reason) == ("end_turn", "end_turn")
    first = requests[0].body
    assert isinstance(first, dict)
    assert first["messages"][-1]["content"].endswith("Check in to the office.")
    system = first["messages"][0]["content"]
    assert "- checkin: Check in.\n- standup: Run a standup." in system and "stolen" not in system
    assert "Checked in." in text and "Standup done." in text
    assert "stolen" in text and "it points outside" in text, "the refused skill is told"
