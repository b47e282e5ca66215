"""The model stream never fails on text: SSE from bytes cut anywhere, split surrogate pairs, hidden characters,
``<think>`` tags split across chunks."""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import Any

import pytest

from hermes_acp.core.sanitize import clean_text
from hermes_acp.providers._sse import SseMessage, SseParser
from hermes_acp.providers._text_stream import TextStream
from hermes_acp.providers._think_tags import ThinkTagSplitter
from hermes_acp.providers.base import TextDelta, ThinkingDelta, ToolCallDelta

from .support import collect, done_of, make_provider
from .test_stream_quirks import chunk, provider_for, serving, sse_body

pytestmark = pytest.mark.anyio

ENGLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"
FAMILY = "👨\u200d👩\u200d👧"


def fed(parser: SseParser, body: bytes, size: int) -> list[SseMessage]:
    messages: list[SseMessage] = []
    for at in range(0, len(body), size):
        messages.extend(parser.feed(body[at : at + size]))
    return messages + parser.flush()


@pytest.mark.parametrize("size", [1, 2, 3, 5, 64])
def test_sse_bytes_cut_anywhere_give_the_same_messages(size: int) -> None:
    body = (
        '\ufeffevent: delta\r\ndata: {"text": "café 日本 😀 \u2028 line\u0085sep"}\r\n\r\n'
        ": comment\rdata: two\rdata: lines\r\rdata: tail without blank line"
    ).encode()

    assert fed(SseParser(), body, size) == [
        SseMessage(event="delta", data='{"text": "café 日本 😀 \u2028 line\u0085sep"}'),
        SseMessage(event="message", data="two\nlines"),
        SseMessage(event="message", data="tail without blank line"),
    ]


def test_a_crlf_split_between_chunks_is_one_line_ending() -> None:
    parser = SseParser()

    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\n\r") == []
    assert parser.feed(b"\ndata: b\n\n") == [SseMessage("message", "a"), SseMessage("message", "b")]


def test_bytes_that_are_not_utf8_become_replacement_characters() -> None:
    assert fed(SseParser(), b"data: ab\xff\xfecd\n\n", 1) == [SseMessage("message", "ab\ufffd\ufffdcd")]


def feed_all(stream: TextStream, fragments: list[str]) -> list[str]:
    released = [stream.feed(fragment) for fragment in fragments]
    return [*released, stream.flush()]


def test_a_surrogate_pair_split_across_two_fragments_is_joined() -> None:
    released = feed_all(TextStream(), ["smile ", "\ud83d", "\ude00", " ok"])

    assert released == ["smile ", "", "😀", " ok", ""]


def test_a_lone_surrogate_becomes_a_replacement_character_and_nothing_is_lost() -> None:
    released = feed_all(TextStream(), ["a\ud800b", "c\udc00", "d\ud83d"])

    assert "".join(released) == "a\ufffdbc\ufffdd\ufffd"
    assert all(part.encode("utf-8") for part in released)


@pytest.mark.parametrize(
    "text",
    [FAMILY, ENGLAND, "\u2764\ufe0f and more", "zero\u200bwidth and \U000e0041tags\u202e here", "plain ascii"],
)
def test_every_cut_of_a_text_releases_what_cleaning_it_whole_gives(text: str) -> None:
    for cut in range(1, len(text)):
        stream = TextStream()
        assert "".join(feed_all(stream, [text[:cut], text[cut:]])) == clean_text(text), cut
    singles = TextStream()
    assert "".join(feed_all(singles, list(text))) == clean_text(text)


@pytest.mark.parametrize("size", [1, 2, 3, 7, 100])
def test_think_tags_split_anywhere_separate_reasoning_from_the_answer(size: int) -> None:
    content = "<think>\nLet me see.\n</think>\n\nThe answer is 4. A <b>tag</b> stays. <think>more</think>End"
    splitter = ThinkTagSplitter()
    runs = []
    for at in range(0, len(content), size):
        runs.extend(splitter.feed(content[at : at + size]))
    runs.extend(splitter.flush())

    thinking = "".join(text for kind, text in runs if kind == "thinking")
    answer = "".join(text for kind, text in runs if kind == "text")
    assert thinking == "Let me see.\nmore"
    assert answer == "The answer is 4. A <b>tag</b> stays. End"


async def test_a_split_emoji_from_the_model_never_fails_the_turn_and_stays_whole() -> None:
    pieces = ["Hi ", "\ud83d", "\ude00", "!", "\ud83d"]  # the last one never gets its other half
    body = sse_body(*[chunk({"content": piece}) for piece in pieces], chunk(finish="stop"), "[DONE]")
    assert b"\\ud83d" in body  # the escapes, as JSON encoders send them

    async with aclosing(provider_for("openai", body)) as provider:
        events = await collect(provider)

    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert shown == "Hi 😀!\ufffd"
    assert done_of(events).message.text == shown
    assert json.dumps(done_of(events).message.model_dump(), ensure_ascii=False).encode("utf-8")


async def test_split_surrogates_in_reasoning_and_tool_arguments_are_joined_too() -> None:
    body = sse_body(
        chunk({"reasoning_content": "think \ud83e"}),
        chunk({"reasoning_content": "\udd14"}),
        chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "say", "arguments": '{"t": "\ud83d'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '\ude00"}'}}]}),
        chunk(finish="tool_calls"),
        "[DONE]",
    )
    async with aclosing(provider_for("openai", body)) as provider:
        events = await collect(provider)

    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "think 🤔"
    assert "".join(e.arguments for e in events if isinstance(e, ToolCallDelta)) == '{"t": "😀"}'
    assert done_of(events).message.tool_calls[0].parsed_arguments() == {"t": "😀"}


async def test_hidden_characters_from_the_model_are_removed_where_shown_and_kept_where_signed() -> None:
    thinking = "weigh \u202eevil\u202c options"
    events_in: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 3}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": thinking}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "ok\u200b\U000e0041"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    async with aclosing(provider_for("anthropic", sse_body(*events_in, named=True))) as provider:
        events = await collect(provider)

    message = done_of(events).message
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "weigh evil options"
    assert message.text == "ok"
    reasoning = message.parts[0]
    assert reasoning.kind == "thinking"
    assert (reasoning.text, reasoning.verbatim, reasoning.signature) == ("weigh evil options", thinking, "sig")


async def test_lone_surrogates_in_data_kept_to_send_back_never_make_the_message_unstorable() -> None:
    block = {"type": "web_search_tool_result", "tool_use_id": "s1", "content": [{"title": "bad \udc00", "url": "u"}]}
    server_call = {"type": "server_tool_use", "id": "s1", "name": "web_search"}
    half = '{"q": "\ud83d'
    events_in: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 3}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "s\ud800"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": server_call},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": half}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '"}'}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": block},
        {"type": "content_block_stop", "index": 2},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    async with aclosing(provider_for("anthropic", sse_body(*events_in, named=True))) as provider:
        anthropic = done_of(await collect(provider)).message
    signature = {"google": {"thought_signature": "x\udfff"}}
    call = {"index": 0, "id": "c", "extra_content": signature, "function": {"name": "f"}}
    details = [{"type": "reasoning.text", "text": "t\ud800", "index": 0}]
    body = sse_body(chunk({"tool_calls": [call], "reasoning_details": details}), chunk(finish="tool_calls"), "[DONE]")
    keep = ["extra_content", "reasoning_details"]
    async with aclosing(make_provider("openai", "http://m.test", transport=serving(body), send_back=keep)) as provider:
        openai = done_of(await collect(provider)).message

    stored = anthropic.model_dump_json() + openai.model_dump_json()
    assert "\\ufffd" in stored or "\ufffd" in stored
    assert anthropic.parts[1].arguments == '{"q": "\ufffd"}'  # type: ignore[union-attr]
