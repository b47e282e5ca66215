"""Session metadata through the real ``python -m hermes_acp`` process (docs/architecture.md §6.11): a title set by the
client survives the turns after it and a restart; a title the title model writes is charged to the budget, and a
restart counts it; archiving a session that works cancels its turn and closes it;
the archive filters; a client system prompt reaches the model's requests as it was given, and after a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes.agent_process import spawn_agent

pytestmark = pytest.mark.anyio

SCENARIO: dict[str, Any] = {
    "name": "metadata",
    "responses": [
        {"match": {"last_message_contains": "long job"}, "steps": [{"text": "Working."}], "hold_after_chunks": 1},
        {"repeat": True, "steps": [{"text": "Sure."}]},
    ],
}


async def test_a_client_title_outlives_the_next_turns_and_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with spawn_agent(tmp_path, SCENARIO, home=home) as agent:
        session_id = await agent.new_session()
        await agent.prompt(session_id, "first, something to title automatically")
        titled = await agent.request("session/set_title", {"sessionId": session_id, "title": "\tRelease notes\n"})
        await agent.prompt(session_id, "second")
        await agent.prompt(session_id, "third")
    async with spawn_agent(tmp_path / "second", SCENARIO, home=home) as agent:
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(agent.workspace), session_id=session_id, mcp_servers=[])
        await agent.prompt(session_id, "fourth")
        listed = await agent.request("session/list", {})
    assert titled == {"title": "Release notes"}
    assert [s["title"] for s in listed["sessions"] if s["sessionId"] == session_id] == ["Release notes"]
    assert agent.client.transcript(session_id)["titles"][-1] == "Release notes"


TITLED: dict[str, Any] = {
    "name": "titled",
    "responses": [
        {
            "match": {"system_contains": "Write a title"},
            "steps": [{"text": "Parser fixes"}],
            "usage": {"input_tokens": 400, "output_tokens": 4},
        },
        {"repeat": True, "steps": [{"text": "Sure."}], "usage": {"input_tokens": 100, "output_tokens": 10}},
    ],
}


async def test_a_model_written_title_is_charged_and_a_restart_counts_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    titled = '[agent]\ntitle_model = "fx:m2"\n'
    async with spawn_agent(tmp_path, TITLED, home=home, config_extra=titled) as agent:
        session_id = await agent.new_session()
        await agent.prompt(session_id, "Fix the parser please")
        await agent.client.wait_for(lambda: bool(agent.client.of_kind("session_info_update", session_id)))
        title = agent.client.of_kind("session_info_update", session_id)[-1]["title"]
    capped = titled + "[budget]\nsession_tokens = 100000\n"
    async with spawn_agent(tmp_path / "second", TITLED, home=home, config_extra=capped) as agent:
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(agent.workspace), session_id=session_id, mcp_servers=[])
        await agent.prompt(session_id, "and the tests")
        meter = agent.client.of_kind("usage_update", session_id)[-1]
    assert title == "Parser fixes"
    assert meter["_meta"]["hermes"]["budget"]["session_tokens"]["spent"] == 110 + 404 + 110, "the title's 404 too"


async def test_archiving_a_working_session_cancels_it_and_the_filters_follow(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, SCENARIO) as agent:
        working = await agent.new_session()
        idle = await agent.new_session()
        results: dict[str, Any] = {}

        async def prompt() -> None:
            results["prompt"] = await agent.prompt(working, "Please do the long job")

        async with anyio.create_task_group() as group:
            group.start_soon(prompt)
            await agent.client.wait_for(lambda: "Working" in agent.client.text(working), timeout=30)
            await agent.request("session/archive", {"sessionId": working})
        default = await agent.request("session/list", {})
        only = await agent.request("session/list", {"archived": "only"})
        await agent.request("session/unarchive", {"sessionId": working})
        back = await agent.request("session/list", {"archived": "exclude"})
    assert results["prompt"].stop_reason == "cancelled"
    assert [(s["sessionId"], s["archived"]) for s in default["sessions"]] == [(idle, False)]
    assert [(s["sessionId"], s["archived"]) for s in only["sessions"]] == [(working, True)]
    assert {s["sessionId"] for s in back["sessions"]} == {working, idle}


async def test_a_client_system_prompt_reaches_every_request_as_given(tmp_path: Path) -> None:
    home = tmp_path / "home"
    workspace = tmp_path / "workspace"
    system_prompt = {"mode": "override", "content": [{"type": "text", "text": "You review diffs. Nothing else."}]}
    async with spawn_agent(tmp_path, SCENARIO, home=home) as agent:
        created = await agent.request(
            "session/new", {"cwd": str(agent.workspace), "mcpServers": [], "systemPrompt": system_prompt}
        )
        session_id = created["sessionId"]
        await agent.prompt(session_id, "one")
        first = agent.model_requests()[-1].body["messages"][0]
    async with spawn_agent(tmp_path / "second", SCENARIO, home=home) as agent:
        await agent.request("session/resume", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []})
        await agent.prompt(session_id, "two")
        second = agent.model_requests()[-1].body["messages"][0]
        status_reply = await agent.prompt(session_id, "/status")
        shown = agent.client.text(session_id)
    assert first["role"] == "system" and first["content"].startswith("You review diffs. Nothing else.\n\nWorking")
    assert second == first, "byte for byte after a restart"
    assert status_reply.stop_reason == "end_turn"
    assert "in place of the agent's own instructions" in shown
