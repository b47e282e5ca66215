"""What a stopped server or a failed write leaves open is repaired, and the model history stays valid (DESIGN §4.5)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from hermes_acp.core import (
    AssistantMessage,
    AssistantMessageStored,
    TextBlock,
    TextPart,
    ToolCallStarted,
    TurnEnded,
    UserMessage,
    UserPrompted,
)
from hermes_acp.providers.scripted import ScriptedProvider, text_reply
from tests.fakes.server import open_pair

pytestmark = pytest.mark.anyio


def _prompted(turn_id: str, text: str) -> UserPrompted:
    return UserPrompted(
        turn_id=turn_id,
        message_id=f"{turn_id}-user",
        display=[TextBlock(text=text)],
        message=UserMessage(parts=[TextPart(text=text)]),
    )


async def test_an_attachment_read_open_when_the_server_stopped_gets_no_tool_result_in_the_history(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider([text_reply("after the crash")])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        await pair.conn.close_session(session_id=session_id)
        await pair.store.append_events(
            session_id,
            [
                _prompted("turn-1", "first"),
                AssistantMessageStored(
                    turn_id="turn-1",
                    message_id="turn-1-answer",
                    message=AssistantMessage(parts=[TextPart(text="hello")]),
                    model_id="scripted:model",
                ),
                TurnEnded(turn_id="turn-1", stop_reason="end_turn"),
                ToolCallStarted(
                    turn_id="turn-2",
                    tool_call_id="call_read",
                    name="read_attachment",
                    title="Read attachment /elsewhere/notes.txt",
                    tool_kind="read",
                ),
            ],
        )
        with anyio.fail_after(5):
            await pair.conn.load_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])
            after = await pair.prompt(session_id, "next")
        (card,) = [u for u in pair.client.of_kind("tool_call_update", session_id) if u["toolCallId"] == "call_read"]
    assert after.stop_reason == "end_turn"
    assert card["status"] == "failed"
    assert "outcome unknown" in card["content"][0]["content"]["text"]
    assert provider.requests[0].messages == [
        UserMessage(parts=[TextPart(text="first")]),
        AssistantMessage(parts=[TextPart(text="hello")]),
        UserMessage(parts=[TextPart(text="next")]),
    ]
