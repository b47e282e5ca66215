"""A command that ran in the editor's terminal survives the process that ran it: the settled card keeps the output's
end as text in the log, and a ``session/load`` in a new process replays that text and never the dead terminal (an
editor drops updates that name a terminal it does not know)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import schema

from tests.fakes.agent_process import spawn_agent
from tests.fakes.editor_client import EditorClient

pytestmark = pytest.mark.anyio

IN_THE_EDITOR: dict[str, Any] = {
    "name": "client-terminal",
    "responses": [
        {
            "match": {"last_message_contains": "run it"},
            "steps": [
                {"tool_call": {"id": "call_echo", "name": "terminal", "arguments": {"command": "echo made-in-editor"}}}
            ],
        },
        {"repeat": True, "steps": [{"text": "Ran it."}]},
    ],
}


def _kinds(card: dict[str, Any]) -> list[str]:
    return [item["type"] for item in card.get("content", [])]


async def test_a_client_terminal_command_replays_as_text_in_a_new_process(tmp_path: Path) -> None:
    home = tmp_path / "home"
    editor = EditorClient()
    try:
        async with spawn_agent(tmp_path, IN_THE_EDITOR, home=home, client=editor, initialize=False) as agent:
            with anyio.fail_after(30):
                await agent.conn.initialize(
                    protocol_version=1,
                    client_capabilities=schema.ClientCapabilities.model_validate(EditorClient.CAPABILITIES),
                )
            session_id = await agent.new_session()
            await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
            await agent.prompt(session_id, "Please run it")
            live = agent.client.cards(session_id)["call_echo"]
    finally:
        await editor.aclose()
    async with spawn_agent(tmp_path / "second", IN_THE_EDITOR, home=home) as agent:
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(tmp_path / "workspace"), session_id=session_id, mcp_servers=[])
        replayed = agent.client.cards(session_id)["call_echo"]
    assert live["status"] == replayed["status"] == "completed"
    assert "terminal" in _kinds(live), "live, the editor shows its own terminal"
    assert "terminal" not in _kinds(replayed), "a replay never names the dead terminal"
    texts = [item["content"]["text"] for item in replayed["content"] if item["type"] == "content"]
    assert any("made-in-editor" in text for text in texts)
