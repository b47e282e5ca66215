"""OpenAIProvider against the scripted model server: deltas, tool calls, usage, stop reasons, request bodies."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

import pytest

from fixtures.model_server import key_fingerprint, serve_model_server
from hermes_acp.core import (
    AssistantMessage,
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from hermes_acp.providers.base import TextDelta, ThinkingDelta, ToolCallDelta

from .support import API_KEY, collect, done_of, make_provider, scenario, served, simple_request

pytestmark = pytest.mark.anyio


async def test_text_streams_as_deltas_and_ends_with_the_whole_message() -> None:
    async with served("openai", scenario({"steps": [{"text": "Hello, world!"}], "chunk_size": 5})) as (_, provider):
        events = await collect(provider)

    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello", ", wor", "ld!"]
    done = done_of(events)
    assert done.message == AssistantMessage(parts=[TextPart(text="Hello, world!")])
    assert done.stop_reason == "end_turn"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_fields_become_thinking_deltas(field: str) -> None:
    response = {
        "steps": [{"reasoning": "Two plus two."}, {"text": "4"}],
        "chunk_size": 6,
        "reasoning_field": field,
    }
    async with served("openai", scenario(response)) as (_, provider):
        events = await collect(provider)

    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["Two pl", "us two", "."]
    kept = {"reasoning_content": "Two plus two."} if field == "reasoning_content" else None  # to send back as sent
    assert done_of(events).message == AssistantMessage(
        parts=[ThinkingPart(text="Two plus two."), TextPart(text="4")], echo=kept
    )


async def test_parallel_tool_calls_keep_provider_ids_and_arguments_split_across_chunks() -> None:
    response = {
        "steps": [
            {"text": "Working."},
            {"tool_call": {"id": "call_W1", "name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}},
            {"tool_call": {"id": "call_T2", "name": "terminal", "arguments": {"command": "cat a.txt"}}},
            {"tool_call": {"name": "terminal", "arguments_raw": '{"command": "ls"', "omit_id": True}},
        ],
        "chunk_size": 7,
    }
    async with served("openai", scenario(response)) as (_, provider):
        events = await collect(provider)

    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [(d.index, d.id, d.name) for d in deltas if d.name] == [
        (0, "call_W1", "write_file"),
        (1, "call_T2", "terminal"),
        (2, None, "terminal"),
    ]
    assert len([d for d in deltas if d.index == 0 and d.arguments]) > 1
    assert "".join(d.arguments for d in deltas if d.index == 1) == '{"command": "cat a.txt"}'
    done = done_of(events)
    assert done.stop_reason == "tool_use"
    assert done.message.parts == [
        TextPart(text="Working."),
        ToolCallPart(id="call_W1", name="write_file", arguments='{"path": "a.txt", "content": "x"}'),
        ToolCallPart(id="call_T2", name="terminal", arguments='{"command": "cat a.txt"}'),
        ToolCallPart(id="", name="terminal", arguments='{"command": "ls"'),
    ]


async def test_usage_reports_cached_and_reasoning_tokens() -> None:
    usage = {"input_tokens": 1200, "output_tokens": 80, "cached_tokens": 1024, "reasoning_tokens": 30}
    async with served("openai", scenario({"steps": [{"text": "ok"}], "usage": usage})) as (_, provider):
        events = await collect(provider)

    assert done_of(events).usage == Usage(
        input_tokens=1200, output_tokens=80, cached_read_tokens=1024, cache_write_tokens=0, thought_tokens=30
    )


@pytest.mark.parametrize(
    ("finish", "steps", "expected"),
    [
        ("end_turn", [{"text": "a"}], "end_turn"),
        ("max_tokens", [{"text": "a"}], "max_tokens"),
        ("refusal", [{"text": "a"}], "refusal"),
        (None, [{"refusal": "I can't help with that."}], "refusal"),
        (None, [{"tool_call": {"name": "terminal", "arguments": {}}}], "tool_use"),
    ],
)
async def test_finish_reasons_map_to_stop_reasons(
    finish: str | None, steps: list[dict[str, Any]], expected: str
) -> None:
    response: dict[str, Any] = {"steps": steps}
    if finish is not None:
        response["finish"] = finish
    async with served("openai", scenario(response)) as (_, provider):
        events = await collect(provider)

    assert done_of(events).stop_reason == expected


async def test_refusal_text_is_streamed_as_text() -> None:
    async with served("openai", scenario({"steps": [{"refusal": "No."}]})) as (_, provider):
        events = await collect(provider)

    assert [e.text for e in events if isinstance(e, TextDelta)] == ["No."]
    assert done_of(events).message.text == "No."


async def test_request_carries_bearer_key_images_and_the_tool_image_user_message() -> None:
    png = ImagePart(media_type="image/png", data="iVBORw0KGgo=")
    request = simple_request(
        messages=[
            UserMessage(parts=[TextPart(text="see"), png]),
            AssistantMessage(parts=[ToolCallPart(id="call_1", name="computer_use", arguments="{}")]),
            ToolResultMessage(tool_call_id="call_1", name="computer_use", parts=[TextPart(text="shot"), png]),
        ]
    )
    async with served("openai", scenario({"steps": [{"text": "I see it."}]})) as (server, provider):
        await collect(provider, request)
        (record,) = server.requests()

    assert record.path == "/v1/chat/completions"
    assert record.headers["authorization"] == "***"
    assert record.credentials["authorization"].sha256_prefix == key_fingerprint(API_KEY)
    assert record.credentials["x-api-key"].present is False
    data_url = "data:image/png;base64,iVBORw0KGgo="
    assert record.body["messages"][1]["content"][1] == {"type": "image_url", "image_url": {"url": data_url}}
    assert record.body["messages"][3]["role"] == "tool"
    assert record.body["messages"][4] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Images returned by tool call call_1 (computer_use):"},
            {"type": "image_url", "image_url": {"url": data_url}},
        ],
    }
    assert record.body["stream"] is True
    assert record.body["stream_options"] == {"include_usage": True}


async def test_no_authorization_header_without_a_key_and_a_root_base_url_works() -> None:
    async with serve_model_server(scenario({"steps": [{"text": "hi"}]})) as server:
        async with aclosing(make_provider("openai", server.base_url, api_key=None)) as provider:
            events = await collect(provider)
        (record,) = server.requests()

    assert done_of(events).message.text == "hi"
    assert record.path == "/chat/completions"
    assert record.credentials["authorization"].present is False
    assert "authorization" not in record.headers


async def test_consecutive_requests_reuse_one_connection() -> None:
    two_answers = scenario({"steps": [{"text": "one"}]}, {"steps": [{"text": "two"}]})
    async with served("openai", two_answers) as (server, provider):
        first = await collect(provider)
        second = await collect(provider)
        records = server.requests()

    assert [done_of(first).message.text, done_of(second).message.text] == ["one", "two"]
    assert records[0].connection == records[1].connection
