"""AnthropicProvider against the scripted model server: blocks, signatures, tool use, usage, stop reasons."""

from __future__ import annotations

from contextlib import aclosing

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
from hermes_acp.providers.anthropic import ANTHROPIC_VERSION
from hermes_acp.providers.base import TextDelta, ThinkingDelta, ToolCallDelta, ToolSpec

from .support import API_KEY, collect, done_of, make_provider, scenario, served, simple_request

pytestmark = pytest.mark.anyio


async def test_thinking_with_signature_then_text() -> None:
    response = {
        "steps": [{"reasoning": "Let me think.", "signature": "EqQBCkYIBxgCKkB"}, {"text": "The answer is 4."}],
        "chunk_size": 5,
    }
    async with served("anthropic", scenario(response)) as (_, provider):
        events = await collect(provider)

    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["Let m", "e thi", "nk."]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "The answer is 4."
    done = done_of(events)
    assert done.message == AssistantMessage(
        parts=[ThinkingPart(text="Let me think.", signature="EqQBCkYIBxgCKkB"), TextPart(text="The answer is 4.")]
    )
    assert done.stop_reason == "end_turn"


async def test_redacted_thinking_is_kept_as_an_opaque_signature() -> None:
    response = {"steps": [{"redacted_thinking": "ENCRYPTED=="}, {"text": "ok"}]}
    async with served("anthropic", scenario(response)) as (_, provider):
        events = await collect(provider)

    assert not [e for e in events if isinstance(e, ThinkingDelta)]
    assert done_of(events).message.parts == [
        ThinkingPart(text="", signature="ENCRYPTED==", redacted=True),
        TextPart(text="ok"),
    ]


async def test_parallel_tool_use_blocks_keep_ids_and_assemble_input_json() -> None:
    response = {
        "steps": [
            {"tool_call": {"id": "toolu_A", "name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}},
            {"tool_call": {"id": "toolu_B", "name": "terminal", "arguments": {"command": "cat a.txt"}}},
            {"tool_call": {"id": "toolu_C", "name": "update_plan"}},
        ],
        "chunk_size": 6,
    }
    async with served("anthropic", scenario(response)) as (_, provider):
        events = await collect(provider)

    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [(d.index, d.id, d.name) for d in deltas if d.id] == [
        (0, "toolu_A", "write_file"),
        (1, "toolu_B", "terminal"),
        (2, "toolu_C", "update_plan"),
    ]
    assert len([d for d in deltas if d.index == 0 and d.arguments]) > 1
    done = done_of(events)
    assert done.stop_reason == "tool_use"
    assert done.message.parts == [
        ToolCallPart(id="toolu_A", name="write_file", arguments='{"path": "a.txt", "content": "x"}'),
        ToolCallPart(id="toolu_B", name="terminal", arguments='{"command": "cat a.txt"}'),
        ToolCallPart(id="toolu_C", name="update_plan", arguments="{}"),
    ]


async def test_usage_adds_cache_reads_and_writes_to_input_tokens() -> None:
    usage = {"input_tokens": 5000, "output_tokens": 120, "cached_tokens": 4000, "cache_write_tokens": 900}
    async with served("anthropic", scenario({"steps": [{"text": "ok"}], "usage": usage})) as (_, provider):
        events = await collect(provider)

    assert done_of(events).usage == Usage(
        input_tokens=5000, output_tokens=120, cached_read_tokens=4000, cache_write_tokens=900
    )


@pytest.mark.parametrize(
    ("finish", "expected"),
    [("end_turn", "end_turn"), ("max_tokens", "max_tokens"), ("refusal", "refusal"), ("tool_use", "tool_use")],
)
async def test_stop_reasons_map(finish: str, expected: str) -> None:
    async with served("anthropic", scenario({"steps": [{"text": "a"}], "finish": finish})) as (_, provider):
        events = await collect(provider)

    assert done_of(events).stop_reason == expected


async def test_request_headers_images_in_user_and_tool_results_and_cache_breakpoints() -> None:
    png = ImagePart(media_type="image/png", data="iVBORw0KGgo=")
    request = simple_request(
        messages=[
            UserMessage(parts=[TextPart(text="see"), png]),
            AssistantMessage(parts=[ToolCallPart(id="toolu_1", name="computer_use", arguments="{}")]),
            ToolResultMessage(tool_call_id="toolu_1", name="computer_use", parts=[TextPart(text="shot"), png]),
        ],
        tools=[ToolSpec(name="computer_use", description="Desktop.", input_schema={"type": "object"})],
    )
    async with served("anthropic", scenario({"steps": [{"text": "I see it."}]})) as (server, provider):
        await collect(provider, request)
        (record,) = server.requests()

    assert record.path == "/v1/messages"
    assert record.headers["anthropic-version"] == ANTHROPIC_VERSION
    assert record.headers["x-api-key"] == "***"
    assert record.credentials["x-api-key"].sha256_prefix == key_fingerprint(API_KEY)
    assert record.credentials["authorization"].present is False
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    body = record.body
    assert body["messages"][0]["content"][1] == image
    assert body["messages"][2]["content"][0]["content"] == [{"type": "text", "text": "shot"}, image]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["max_tokens"] > 0


async def test_a_base_url_ending_in_v1_is_not_doubled() -> None:
    async with serve_model_server(scenario({"steps": [{"text": "hi"}]})) as server:
        async with aclosing(make_provider("anthropic", server.base_url + "/v1")) as provider:
            events = await collect(provider)
        (record,) = server.requests()

    assert record.path == "/v1/messages"
    assert done_of(events).message.text == "hi"


async def test_consecutive_requests_reuse_one_connection() -> None:
    two_answers = scenario({"steps": [{"text": "one"}]}, {"steps": [{"text": "two"}]})
    async with served("anthropic", two_answers) as (server, provider):
        first = await collect(provider)
        second = await collect(provider)
        records = server.requests()

    assert [done_of(first).message.text, done_of(second).message.text] == ["one", "two"]
    assert records[0].connection == records[1].connection
