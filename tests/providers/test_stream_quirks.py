"""Stream shapes real servers send that the scripted server does not: recorded SSE bodies via MockTransport."""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import Any

import httpx
import pytest

from hermes_acp.core import TextPart, ThinkingPart, ToolCallPart, Usage
from hermes_acp.errors import ProviderRequestError, ProviderStreamError, ProviderUnavailableError
from hermes_acp.providers.base import ToolCallDelta

from .support import RecordingSleep, WireFormat, collect, done_of, make_provider

pytestmark = pytest.mark.anyio


def sse_body(*events: dict[str, Any] | str, named: bool = False) -> bytes:
    lines: list[str] = []
    for event in events:
        if isinstance(event, str):
            lines.append(f"data: {event}\n\n")
        elif named:
            lines.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n")
        else:
            lines.append(f"data: {json.dumps(event)}\n\n")
    return "".join(lines).encode()


def serving(*bodies: bytes) -> httpx.MockTransport:
    queue = list(bodies)

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=queue.pop(0))

    return httpx.MockTransport(answer)


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}], **extra}


def provider_for(wire_format: WireFormat, *bodies: bytes, sleep: RecordingSleep | None = None) -> Any:
    return make_provider(wire_format, "http://model.test", transport=serving(*bodies), sleep=sleep)


async def test_whole_tool_calls_without_index_and_reused_index_zero_are_separate_calls() -> None:
    body = sse_body(
        chunk({"tool_calls": [{"id": "a", "function": {"name": "read_file", "arguments": '{"path": "x"}'}}]}),
        chunk({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "terminal", "arguments": "{}"}}]}),
        chunk(finish="stop"),
        "[DONE]",
    )
    async with aclosing(provider_for("openai", body)) as provider:
        events = await collect(provider)

    assert [(d.index, d.id) for d in events if isinstance(d, ToolCallDelta)] == [(0, "a"), (1, "b")]
    done = done_of(events)
    assert done.message.parts == [
        ToolCallPart(id="a", name="read_file", arguments='{"path": "x"}'),
        ToolCallPart(id="b", name="terminal", arguments="{}"),
    ]
    assert done.stop_reason == "tool_use"


async def test_arguments_sent_as_an_object_are_serialised_and_usage_in_the_finish_chunk_counts() -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 3, "prompt_cache_hit_tokens": 8}
    body = sse_body(
        chunk({"reasoning": "hmm", "content": "ok"}),
        chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "t", "arguments": {"k": 1}}}]}),
        chunk(finish="tool_calls", usage=usage),
        "[DONE]",
    )
    async with aclosing(provider_for("openai", body)) as provider:
        events = await collect(provider)

    done = done_of(events)
    assert done.message.parts == [
        ThinkingPart(text="hmm"),
        TextPart(text="ok"),
        ToolCallPart(id="c", name="t", arguments='{"k": 1}'),
    ]
    assert done.usage == Usage(input_tokens=10, output_tokens=3, cached_read_tokens=8)


async def test_a_body_that_ends_after_finish_reason_without_done_is_complete() -> None:
    async with aclosing(
        provider_for("openai", sse_body(chunk({"content": "fine"}), chunk(finish="length")))
    ) as provider:
        events = await collect(provider)

    assert done_of(events).stop_reason == "max_tokens"


async def test_a_body_that_ends_before_any_finish_is_retried_then_unavailable() -> None:
    sleep = RecordingSleep()
    bodies = [sse_body(chunk({"role": "assistant"}))] * 2
    async with aclosing(
        make_provider("openai", "http://model.test", transport=serving(*bodies), sleep=sleep, max_retries=1)
    ) as provider:
        with pytest.raises(ProviderUnavailableError, match="ended before the response finished"):
            await collect(provider)

    assert len(sleep.delays) == 1


async def test_malformed_json_is_a_stream_error() -> None:
    async with aclosing(provider_for("openai", b"data: {not json\n\n")) as provider:
        with pytest.raises(ProviderStreamError, match="not JSON"):
            await collect(provider)


async def test_an_in_band_error_with_a_client_status_is_not_retried() -> None:
    body = sse_body({"error": {"message": "context length exceeded", "code": 400}})
    sleep = RecordingSleep()
    async with aclosing(provider_for("openai", body, sleep=sleep)) as provider:
        with pytest.raises(ProviderRequestError, match="context length exceeded") as caught:
            await collect(provider)

    assert caught.value.status == 400
    assert sleep.delays == []


async def test_anthropic_unknown_events_and_blocks_are_ignored_and_usage_updates_are_merged() -> None:
    events_in: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 7, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "brand_new_block", "id": "s"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": "Hi"}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "citations_delta", "citation": {}}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": " there"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "brand_new_event"},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "stop_sequence"},
            "usage": {"output_tokens": 5, "cache_read_input_tokens": 3},
        },
        {"type": "message_stop"},
    ]
    async with aclosing(provider_for("anthropic", sse_body(*events_in, named=True))) as provider:
        events = await collect(provider)

    done = done_of(events)
    assert done.message.parts == [TextPart(text="Hi there")]
    assert done.stop_reason == "end_turn"
    assert done.usage == Usage(input_tokens=10, output_tokens=5, cached_read_tokens=3)


async def test_an_anthropic_body_that_ends_after_the_stop_reason_without_message_stop_is_complete() -> None:
    events_in: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 4}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "all here"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
    ]
    async with aclosing(provider_for("anthropic", sse_body(*events_in, named=True))) as provider:
        events = await collect(provider)

    done = done_of(events)
    assert done.message.parts == [TextPart(text="all here")]
    assert done.stop_reason == "end_turn"
    assert done.usage == Usage(input_tokens=4, output_tokens=2)


async def test_anthropic_stream_without_message_stop_is_incomplete() -> None:
    body = sse_body({"type": "message_start", "message": {"usage": {}}}, named=True)
    async with aclosing(
        make_provider("anthropic", "http://model.test", transport=serving(body, body), max_retries=1)
    ) as provider:
        with pytest.raises(ProviderUnavailableError, match="before message_stop"):
            await collect(provider)


async def test_a_negative_or_non_integer_token_count_counts_as_none() -> None:
    """A count below zero would take back what the budget was charged: it reads as 0, as a missing one does."""
    usage = {"prompt_tokens": -1_000_000, "completion_tokens": 3, "completion_tokens_details": {"reasoning_tokens": -2}}
    openai = sse_body(chunk({"content": "ok"}), chunk(finish="stop", usage=usage), "[DONE]")
    async with aclosing(provider_for("openai", openai)) as provider:
        from_openai = done_of(await collect(provider)).usage
    anthropic = sse_body(
        {"type": "message_start", "message": {"usage": {"input_tokens": -7, "output_tokens": True}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"cache_read_input_tokens": -3}},
        {"type": "message_stop"},
        named=True,
    )
    async with aclosing(provider_for("anthropic", anthropic)) as provider:
        from_anthropic = done_of(await collect(provider)).usage
    assert from_openai == Usage(input_tokens=0, output_tokens=3)
    assert from_anthropic == Usage()
