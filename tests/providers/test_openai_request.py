"""Neutral messages → OpenAI chat-completions request bodies, asserted whole."""

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
from hermes_acp.providers._openai_request import build_chat_request
from hermes_acp.providers.base import ProviderRequest, ToolSpec

PNG = ImagePart(media_type="image/png", data="iVBORw0KGgo=")
JPEG = ImagePart(media_type="image/jpeg", data="/9j/4AAQ")


def test_a_whole_conversation_with_tools_reasoning_and_images() -> None:
    request = ProviderRequest(
        model="qwen3",
        system="Be brief.",
        messages=[
            UserMessage(parts=[TextPart(text="What is on screen?"), PNG]),
            AssistantMessage(
                parts=[
                    ThinkingPart(text="I should look.", signature=None),
                    TextPart(text="Let me check."),
                    ToolCallPart(id="call_a", name="computer_use", arguments='{"action": "capture"}'),
                    ToolCallPart(id="call_b", name="read_file", arguments='{"path": "a.txt"}'),
                ]
            ),
            ToolResultMessage(
                tool_call_id="call_a", name="computer_use", parts=[TextPart(text="Captured."), JPEG, PNG]
            ),
            ToolResultMessage(tool_call_id="call_b", name="read_file", parts=[TextPart(text="contents")]),
            UserMessage(parts=[TextPart(text="And now?")]),
        ],
        tools=[ToolSpec(name="read_file", description="Read a file.", input_schema={"type": "object"})],
        max_output_tokens=512,
    )

    body = build_chat_request(request)

    assert body == {
        "model": "qwen3",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is on screen?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                ],
            },
            {
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "computer_use", "arguments": '{"action": "capture"}'},
                    },
                    {
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                    },
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "call_a",
                "content": "Captured.\n[The 2 images of this result follow in the next user message.]",
            },
            {"role": "tool", "tool_call_id": "call_b", "content": "contents"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Images returned by tool call call_a (computer_use):"},
                    {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                ],
            },
            {"role": "user", "content": "And now?"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {
                "type": "function",
                "function": {"name": "read_file", "description": "Read a file.", "parameters": {"type": "object"}},
            }
        ],
        "max_tokens": 512,
    }


def test_minimal_request_has_no_system_tools_or_token_limit() -> None:
    request = ProviderRequest(
        model="m", system="", messages=[UserMessage(parts=[TextPart(text="a"), TextPart(text="b")])]
    )

    assert build_chat_request(request) == {
        "model": "m",
        "messages": [{"role": "user", "content": "a\n\nb"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def test_tool_only_assistant_message_has_null_content_and_bad_arguments_become_an_empty_object() -> None:
    request = ProviderRequest(
        model="m",
        system="s",
        messages=[
            UserMessage(parts=[TextPart(text="go")]),
            AssistantMessage(parts=[ToolCallPart(id="c1", name="terminal", arguments='{"command": "ls"')]),
            ToolResultMessage(tool_call_id="c1", name="terminal", parts=[], is_error=True),
            AssistantMessage(parts=[ThinkingPart(text="only thoughts")]),
        ],
    )

    body = build_chat_request(request, max_tokens_field="max_completion_tokens", default_max_tokens=99)

    assert body["messages"][2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": ""},
    ]
    assert body["max_completion_tokens"] == 99
    assert "max_tokens" not in body


def test_images_of_a_tool_result_at_the_end_of_history_are_carried_by_a_final_user_message() -> None:
    request = ProviderRequest(
        model="m",
        system="",
        messages=[
            AssistantMessage(parts=[ToolCallPart(id="c1", name="computer_use", arguments="{}")]),
            ToolResultMessage(tool_call_id="c1", name="computer_use", parts=[PNG]),
        ],
    )

    messages = build_chat_request(request)["messages"]

    assert messages[1:] == [
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "[The image of this result follows in the next user message.]",
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Images returned by tool call c1 (computer_use):"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
        },
    ]
