"""What a stopped server or a failed write leaves open is repaired, and the model history stays valid
(docs/architecture.md §4.5)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import pytest
from acp import RequestError

from hermes_acp.core import (
    AssistantMessage,
    AssistantMessageStored,
    SessionEvent,
    TextBlock,
    TextPart,
    ToolCallPart,
    ToolCallSettled,
    ToolCallStarted,
    ToolResultMessage,
    TurnEnded,
    UserMessage,
    UserPrompted,
)
from hermes_acp.errors import StorageError
from hermes_acp.providers.scripted import ScriptedProvider, text_reply, tool_reply
from hermes_acp.storage.base import SessionStore, StoredEvent
from hermes_acp.turns.recovery import STORE_FAILED_TEXT
from tests.fakes.server import open_pair
from tests.fakes.tools import EchoTool, args

pytestmark = pytest.mark.anyio


def _prompted(turn_id: str, text: str) -> UserPrompted:
    return UserPrompted(
        turn_id=turn_id,
        message_id=f"{turn_id}-user",
        display=[TextBlock(text=text)],
        message=UserMessage(parts=[TextPart(text=text)]),
    )


def _fail_one_write(
    monkeypatch: pytest.MonkeyPatch, store: SessionStore, matches: Callable[[Sequence[SessionEvent]], bool]
) -> list[Sequence[SessionEvent]]:
    """Make the first write whose events ``matches`` fail like a full disk; returns the refused batches."""
    original = store.append_events
    refused: list[Sequence[SessionEvent]] = []

    async def append_events(session_id: str, events: Sequence[SessionEvent]) -> list[StoredEvent]:
        if not refused and matches(events):
            refused.append(events)
            raise StorageError("session store: disk I/O error (test)")
        return await original(session_id, events)

    monkeypatch.setattr(store, "append_events", append_events)
    return refused


async def test_a_live_session_repairs_what_a_failed_write_left_open_before_its_next_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    echo_call = ToolCallPart(id="call_echo", name="echo", arguments=args(message="x"))
    provider = ScriptedProvider([tool_reply(echo_call), text_reply("fine")])
    async with open_pair(tmp_path, provider=provider, tools=[EchoTool()]) as pair:
        session_id = await pair.new_session()
        refused = _fail_one_write(
            monkeypatch, pair.store, lambda events: any(isinstance(e, ToolCallSettled) for e in events)
        )
        with anyio.fail_after(5), pytest.raises(RequestError):
            await pair.prompt(session_id, "go")
        with anyio.fail_after(5):
            after = await pair.prompt(session_id, "again")
    assert refused
    assert after.stop_reason == "end_turn"
    assert provider.requests[1].messages == [
        UserMessage(parts=[TextPart(text="go")]),
        AssistantMessage(parts=[echo_call]),
        ToolResultMessage(
            tool_call_id="call_echo", name="echo", parts=[TextPart(text=STORE_FAILED_TEXT)], is_error=True
        ),
        UserMessage(parts=[TextPart(text="again")]),
    ]


async def test_a_failed_write_never_leaves_a_stored_call_unannounced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    echo = EchoTool()
    provider = ScriptedProvider([tool_reply(ToolCallPart(id="call_echo", name="echo", arguments=args(message="x")))])
    async with open_pair(tmp_path, provider=provider, tools=[echo]) as pair:
        session_id = await pair.new_session()
        refused = _fail_one_write(
            monkeypatch, pair.store, lambda events: any(isinstance(e, ToolCallStarted) for e in events)
        )
        with anyio.fail_after(5), pytest.raises(RequestError):
            await pair.prompt(session_id, "go")
        live = [u for s, u in pair.client.updates if s == session_id]
        await pair.conn.close_session(session_id=session_id)
        pair.client.clear()
        with anyio.fail_after(5):
            await pair.conn.load_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])
        replay = [u for s, u in pair.client.updates if s == session_id]
    assert refused
    assert echo.runs == []
    for updates in (live, replay):
        announced: set[str] = set()
        for update in updates:
            if update["sessionUpdate"] == "tool_call":
                announced.add(update["toolCallId"])
            elif update["sessionUpdate"] == "tool_call_update":
                assert update["toolCallId"] in announced


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
