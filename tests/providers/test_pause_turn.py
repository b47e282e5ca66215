"""Anthropic's ``pause_turn`` is continued by the provider: the request goes again with the paused content as the last
assistant message, the deltas flow on as one stream, and one final event holds the whole answer."""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import Any

import httpx
import pytest

from hermes_acp.core import ServerToolCallPart, TextPart, Usage
from hermes_acp.errors import ProviderStreamError
from hermes_acp.providers._http import MAX_CONTINUATIONS
from hermes_acp.providers.base import TextDelta

from .support import collect, done_of, make_provider, simple_request
from .test_stream_quirks import sse_body

pytestmark = pytest.mark.anyio


def answer(text: str, stop: str, *, search: str | None = None) -> bytes:
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {"usage": {"input_tokens": 10}}}]
    index = 0
    if search is not None:
        block = {"type": "server_tool_use", "id": f"srvtoolu_{search}", "name": "web_search", "input": {}}
        events += [
            {"type": "content_block_start", "index": 0, "content_block": block},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps({"query": search})},
            },
            {"type": "content_block_stop", "index": 0},
        ]
        index = 1
    events += [
        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": index},
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    ]
    return sse_body(*events, named=True)


def transport(bodies: list[bytes], seen: list[dict[str, Any]]) -> httpx.MockTransport:
    def reply(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        body = bodies.pop(0) if bodies else b""
        if not body:
            return httpx.Response(529, json={"type": "error", "error": {"type": "overloaded_error", "message": "x"}})
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return httpx.MockTransport(reply)


async def test_a_paused_answer_is_continued_and_ends_as_one_answer() -> None:
    seen: list[dict[str, Any]] = []
    bodies = [answer("Searching. ", "pause_turn", search="a"), answer("Found it.", "end_turn")]
    async with aclosing(make_provider("anthropic", "http://a.test", transport=transport(bodies, seen))) as provider:
        events = await collect(provider)

    done = done_of(events)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Searching. Found it."
    assert done.stop_reason == "end_turn"
    assert done.usage == Usage(input_tokens=20, output_tokens=6)
    assert [type(p) for p in done.message.parts] == [ServerToolCallPart, TextPart, TextPart]
    assert len(seen) == 2
    assert [m["content"][0]["text"] for m in seen[1]["messages"][:-1]] == ["hello"]
    assert seen[1]["messages"][-1] == {
        "role": "assistant",
        "content": [
            {"type": "server_tool_use", "id": "srvtoolu_a", "name": "web_search", "input": {"query": "a"}},
            {"type": "text", "text": "Searching. "},
        ],
    }
    assert seen[1]["system"] == seen[0]["system"]


async def test_continuations_are_bounded() -> None:
    seen: list[dict[str, Any]] = []
    bodies = [answer(f"{n} ", "pause_turn") for n in range(MAX_CONTINUATIONS + 5)]
    async with aclosing(make_provider("anthropic", "http://a.test", transport=transport(bodies, seen))) as provider:
        events = await collect(provider)

    assert len(seen) == MAX_CONTINUATIONS + 1
    assert done_of(events).message.text == "".join(f"{n} " for n in range(MAX_CONTINUATIONS + 1))


async def test_a_continuation_that_fails_after_output_raises_and_what_was_shown_stays_shown() -> None:
    seen: list[dict[str, Any]] = []
    bodies = [answer("Part one. ", "pause_turn"), answer("never", "end_turn")[:60]]
    provider = make_provider("anthropic", "http://a.test", transport=transport(bodies, seen), max_retries=0)
    shown: list[str] = []

    async def consume() -> None:
        async with aclosing(provider.stream(simple_request())) as stream:
            async for event in stream:
                if isinstance(event, TextDelta):
                    shown.append(event.text)

    async with aclosing(provider):
        with pytest.raises(ProviderStreamError):
            await consume()

    assert shown == ["Part one. "]
