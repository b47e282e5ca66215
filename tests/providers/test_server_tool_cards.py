"""Tools a provider ran on its own side become cards that are announced and settled at once, under the provider's
id (a fresh one when it gave none or one already used), with what the provider returned as their text."""

from __future__ import annotations

from hermes_acp.core import (
    AssistantMessage,
    ServerToolCallPart,
    ServerToolResultPart,
    TextBlock,
    TextPart,
    ToolCallPart,
    ToolCallSettled,
    ToolCallStarted,
)
from hermes_acp.turns.server_tools import server_tool_events


def test_each_provider_side_call_is_started_and_settled_with_its_result() -> None:
    message = AssistantMessage(
        parts=[
            ServerToolCallPart(id="srvtoolu_1", name="web_search", arguments='{"query": "weather sf"}'),
            ServerToolResultPart(tool_call_id="srvtoolu_1", name="web_search_tool_result", text="Weather — https://w"),
            ServerToolCallPart(id="srvtoolu_2", name="web_search", arguments="{}"),
            ServerToolResultPart(
                tool_call_id="srvtoolu_2", name="web_search_tool_result", text="error: max_uses_exceeded", is_error=True
            ),
            ServerToolCallPart(id="", name="code_execution", arguments='{"code": "1+1"}'),
            ServerToolCallPart(id="srvtoolu_old", name="tool_search_tool_bm25", arguments='{"query": "notes"}'),
            TextPart(text="Sunny."),
        ]
    )

    events = server_tool_events("turn_1", message, {"srvtoolu_old"})

    started = [e for e in events if isinstance(e, ToolCallStarted)]
    settled = [e for e in events if isinstance(e, ToolCallSettled)]
    assert [type(e) for e in events] == [ToolCallStarted, ToolCallSettled] * 4
    assert [s.tool_call_id for s in started][:2] == ["srvtoolu_1", "srvtoolu_2"]
    assert started[2].tool_call_id.startswith("call_") and started[3].tool_call_id not in ("", "srvtoolu_old")
    assert [s.tool_call_id for s in settled] == [s.tool_call_id for s in started]
    assert [(s.title, s.tool_kind) for s in started] == [
        ("web_search: weather sf", "search"),
        ("web_search", "search"),
        ("code_execution: 1+1", "execute"),
        ("tool_search_tool_bm25: notes", "search"),
    ]
    assert started[0].raw_input == {"query": "weather sf"}
    assert [s.status for s in settled] == ["completed", "failed", "completed", "completed"]
    assert settled[0].content == [TextBlock(text="Weather — https://w")]
    assert settled[2].content == [TextBlock(text="Ran on the provider's side; its result went to the model directly.")]
    assert all(s.result is None for s in settled)


def test_a_message_without_provider_side_tools_gives_no_cards() -> None:
    assert server_tool_events("t", AssistantMessage(parts=[TextPart(text="hi")]), set()) == []


def test_a_card_never_takes_the_id_of_a_tool_call_of_the_same_response() -> None:
    message = AssistantMessage(
        parts=[
            ServerToolCallPart(id="call_1", name="web_search", arguments='{"query": "x"}'),
            ServerToolCallPart(id="srvtoolu_1", name="web_search", arguments='{"query": "y"}'),
            ServerToolCallPart(id="srvtoolu_1", name="web_search", arguments='{"query": "z"}'),
            ToolCallPart(id="call_1", name="read_file", arguments='{"path": "a"}'),
        ]
    )
    started = [e.tool_call_id for e in server_tool_events("t", message, set()) if isinstance(e, ToolCallStarted)]
    assert started[1] == "srvtoolu_1" and len(set(started)) == 3
    assert "call_1" not in started, "the response's own call keeps its id; the card gets a fresh one"
