"""Neutral messages → Anthropic Messages request bodies, asserted whole."""

from __future__ import annotations

from hermes_acp.core import (
    AssistantMessage,
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)
from hermes_acp.providers._anthropic_request import DEFAULT_MAX_TOKENS, build_messages_request
from hermes_acp.providers.base import ProviderRequest, ToolSpec

PNG = ImagePart(media_type="image/png", data="iVBORw0KGgo=")
EPHEMERAL = {"type": "ephemeral"}


def test_a_whole_conversation_with_cache_breakpoints_signed_thinking_and_tool_images() -> None:
    request = ProviderRequest(
        model="claude-sonnet-4-5",
        system="Be brief.",
        messages=[
            UserMessage(parts=[TextPart(text="Look at this"), PNG]),
            AssistantMessage(
                parts=[
                    ThinkingPart(text="Thinking hard.", signature="sig-1"),
                    ThinkingPart(text="", signature="opaque-data", redacted=True),
                    ThinkingPart(text="from another provider", signature=None),
                    TextPart(text="Checking."),
                    ToolCallPart(id="toolu_1", name="computer_use", arguments='{"action": "capture"}'),
                    ToolCallPart(id="toolu_2", name="read_file", arguments='{"path": "a.txt"'),
                ]
            ),
            ToolResultMessage(tool_call_id="toolu_1", name="computer_use", parts=[TextPart(text="Captured."), PNG]),
            ToolResultMessage(
                tool_call_id="toolu_2", name="read_file", parts=[TextPart(text="bad args")], is_error=True
            ),
        ],
        tools=[
            ToolSpec(name="read_file", description="Read.", input_schema={"type": "object"}),
            ToolSpec(name="computer_use", description="Desktop.", input_schema={"type": "object"}),
        ],
        max_output_tokens=1024,
    )

    body = build_messages_request(request)

    assert body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "stream": True,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": EPHEMERAL}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look at this"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Thinking hard.", "signature": "sig-1"},
                    {"type": "redacted_thinking", "data": "opaque-data"},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "computer_use", "input": {"action": "capture"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [
                            {"type": "text", "text": "Captured."},
                            {
                                "type": "image",
                                "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                            },
                        ],
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": [{"type": "text", "text": "bad args"}],
                        "is_error": True,
                        "cache_control": EPHEMERAL,
                    },
                ],
            },
        ],
        "tools": [
            {"name": "read_file", "description": "Read.", "input_schema": {"type": "object"}},
            {
                "name": "computer_use",
                "description": "Desktop.",
                "input_schema": {"type": "object"},
                "cache_control": EPHEMERAL,
            },
        ],
    }


def test_defaults_without_system_tools_or_limit_and_empty_parts_dropped() -> None:
    request = ProviderRequest(
        model="m",
        system="",
        messages=[
            UserMessage(parts=[TextPart(text="hi"), TextPart(text="")]),
            AssistantMessage(parts=[TextPart(text="")]),
            UserMessage(parts=[TextPart(text="again")]),
        ],
    )

    assert build_messages_request(request) == {
        "model": "m",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "stream": True,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "hi"},
                    {"type": "text", "text": "again", "cache_control": EPHEMERAL},
                ],
            }
        ],
    }


def test_configured_max_tokens_is_used_when_the_request_has_none_and_a_trailing_assistant_gets_no_breakpoint() -> None:
    request = ProviderRequest(
        model="m",
        system="s",
        messages=[
            UserMessage(parts=[TextPart(text="q")]),
            AssistantMessage(parts=[TextPart(text="prefill")]),
        ],
    )

    body = build_messages_request(request, default_max_tokens=321)

    assert body["max_tokens"] == 321
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "prefill"}]},
    ]
