"""Warnings reach the user as ``notice`` updates where the client advertised ``session.notices`` (live only, never
stored), and as agent text (stored, replayed) where it did not: a provider retry and a configured desktop driver
that cannot be found, through the real process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import schema

from tests.fakes.agent_process import AgentProcess, spawn_agent

pytestmark = pytest.mark.anyio

RATE_LIMITED_ONCE: dict[str, Any] = {
    "name": "rate-limited-once",
    "responses": [
        {"error": {"status": 429, "message": "slow down", "retry_after": "0"}},
        {"repeat": True, "steps": [{"text": "Answered after the retry."}]},
    ],
}
MISSING_DRIVER = '[computer_use]\ndriver_command = ["no-such-cua-driver", "mcp"]\n'


async def _initialize(agent: AgentProcess, *, notices: bool) -> None:
    capabilities: dict[str, Any] = {"session": {"notices": {}}} if notices else {}
    with anyio.fail_after(30):
        await agent.conn.initialize(
            protocol_version=1, client_capabilities=schema.ClientCapabilities.model_validate(capabilities)
        )


@pytest.mark.parametrize("notices", [True, False], ids=["notices", "text"])
async def test_a_provider_retry_and_a_missing_driver_are_told(tmp_path: Path, notices: bool) -> None:
    async with spawn_agent(
        tmp_path, RATE_LIMITED_ONCE, initialize=False, max_retries=2, config_extra=MISSING_DRIVER
    ) as agent:
        await _initialize(agent, notices=notices)
        session_id = await agent.new_session()
        response = await agent.prompt(session_id, "hello")
        shown = agent.client.of_kind("notice", session_id)
        text = agent.client.text(session_id)
        events = [e.event.kind for e in await _events(agent, session_id)]
    assert response.stop_reason == "end_turn"
    assert text.endswith("Answered after the retry.")
    titles = [n["title"] for n in shown]
    if notices:
        assert titles == [
            "computer_use is off: the cua-driver was not found",
            "Retrying the model request in 0 s (1 of 2)",
        ]
        assert "rate limited" in shown[1].get("description", "")
        assert "notice_added" not in events, "notices are live only"
    else:
        assert titles == []
        assert "⚠ computer_use is off: the cua-driver was not found" in text
        assert "⚠ Retrying the model request in 0 s (1 of 2)" in text
        assert events.count("notice_added") == 2


async def _events(agent: AgentProcess, session_id: str) -> list[Any]:
    from hermes_acp.storage.sqlite import SqliteSessionStore

    store = await SqliteSessionStore.open(agent.home / "state.db")
    try:
        return await store.load_events(session_id)
    finally:
        await store.aclose()
