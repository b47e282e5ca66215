"""What a service needs back is kept and sent back to it, and only to it: DeepSeek's ``reasoning_content``,
OpenRouter's ``reasoning_details``, Gemini's ``extra_content`` thought signatures (each whenever the stream carried
it, unless ``send_back`` says otherwise), Anthropic's own tool blocks; ``think_tags`` only for the model that has
it. Streams in the shapes the services document, through the real providers (MockTransport), and request bodies
asserted whole."""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import Any

import httpx
import pytest

from hermes_acp.config import ProviderSettings
from hermes_acp.core import (
    AssistantMessage,
    ServerToolCallPart,
    ServerToolResultPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)
from hermes_acp.providers._anthropic_request import build_messages_request
from hermes_acp.providers._openai_request import build_chat_request
from hermes_acp.providers.base import ProviderRequest, TextDelta, ThinkingDelta

from .support import collect, done_of, make_provider
from .test_stream_quirks import chunk, sse_body

pytestmark = pytest.mark.anyio

SIGNATURE = {"google": {"thought_signature": "EocDCoQDAdHtim9"}}
GEMINI_STREAM = sse_body(  # the whole call in one chunk, as Gemini's OpenAI endpoint streams it
    chunk(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "extra_content": SIGNATURE,
                    "function": {"arguments": '{"path":"a.txt"}', "name": "read_file"},
                    "id": "FL1tqiJ9",
                    "type": "function",
                }
            ],
        },
        model="gemini-3-pro-preview",
    ),
    chunk(finish="tool_calls"),
    "[DONE]",
)


def recording_transport(body: bytes, seen: list[dict[str, Any]]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return httpx.MockTransport(answer)


def follow_up(message: AssistantMessage) -> ProviderRequest:
    history: list[Any] = [UserMessage(parts=[TextPart(text="go")]), message]
    history += [
        ToolResultMessage(tool_call_id=c.id, name=c.name, parts=[TextPart(text="done")]) for c in message.tool_calls
    ]
    return ProviderRequest(model="m", system="s", messages=history)


@pytest.mark.parametrize(
    ("send_back", "sent"), [(None, True), (["extra_content"], True), ([], False)], ids=["unset", "named", "none"]
)
async def test_gemini_thought_signatures_are_kept_and_sent_back_unless_send_back_leaves_them_out(
    send_back: list[str] | None, sent: bool
) -> None:
    seen: list[dict[str, Any]] = []
    transport = recording_transport(GEMINI_STREAM, seen)
    options: dict[str, Any] = {} if send_back is None else {"send_back": send_back}
    async with aclosing(make_provider("openai", "http://gemini.test/v1", transport=transport, **options)) as p:
        message = done_of(await collect(p)).message
        await collect(p, follow_up(message))

    assert message.tool_calls[0].echo == {"extra_content": SIGNATURE}, "kept in any case: a server may demand it"
    sent_call = seen[1]["messages"][2]["tool_calls"][0]
    assert sent_call == {
        "id": "FL1tqiJ9",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path":"a.txt"}'},
        **({"extra_content": SIGNATURE} if sent else {}),
    }


def test_an_unset_send_back_is_automatic_whatever_the_host() -> None:
    def fields(url: str, **extra: Any) -> frozenset[str] | None:
        return ProviderSettings(kind="openai", base_url=url, **extra).send_back_fields()

    assert fields("https://api.deepseek.com") is None
    assert fields("http://localhost:4000/v1") is None, "a proxy in front of DeepSeek is treated alike"
    assert fields("https://openrouter.ai/api/v1", send_back=[]) == frozenset()
    assert fields("http://localhost:4000/v1", send_back=["reasoning_content"]) == frozenset({"reasoning_content"})


OPENROUTER_DETAILS = [
    {"type": "reasoning.text", "text": "", "signature": "", "format": "anthropic-claude-v1", "index": 0},
    {"type": "reasoning.text", "text": "Use ", "format": "anthropic-claude-v1", "index": 0},
    {"type": "reasoning.text", "text": "the tool.", "format": "anthropic-claude-v1", "index": 0},
    {"type": "reasoning.text", "signature": "EqQB", "format": "anthropic-claude-v1", "index": 0},
    {"type": "reasoning.encrypted", "data": "gAAA", "index": 1},
]


async def test_openrouter_reasoning_details_are_merged_by_index_and_sent_back_with_tool_calls() -> None:
    chunks = [chunk({"reasoning": d.get("text") or None, "reasoning_details": [d]}) for d in OPENROUTER_DETAILS]
    call = {"index": 0, "id": "toolu_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    body = sse_body(*chunks, chunk({"tool_calls": [call]}), chunk(finish="tool_calls"), "[DONE]")
    seen: list[dict[str, Any]] = []
    transport = recording_transport(body, seen)
    async with aclosing(
        make_provider("openai", "http://router.test/v1", transport=transport, send_back=["reasoning_details"])
    ) as provider:
        events = await collect(provider)
        await collect(provider, follow_up(done_of(events).message))

    merged = [
        {
            "type": "reasoning.text",
            "text": "Use the tool.",
            "signature": "EqQB",
            "format": "anthropic-claude-v1",
            "index": 0,
        },
        {"type": "reasoning.encrypted", "data": "gAAA", "index": 1},
    ]
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "Use the tool."
    assert done_of(events).message.echo == {"reasoning_details": merged}
    assert seen[1]["messages"][2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
        "reasoning_details": merged,
    }


def test_reasoning_goes_back_only_on_tool_calling_messages_and_only_as_asked() -> None:
    details = {"reasoning_details": [{"type": "reasoning.encrypted", "data": "x", "index": 0}]}
    calling = AssistantMessage(
        parts=[ThinkingPart(text="plan"), ToolCallPart(id="c", name="ls", arguments="{}")], echo=details
    )
    answering = AssistantMessage(parts=[ThinkingPart(text="done thinking"), TextPart(text="Here.")], echo=details)
    request = ProviderRequest(
        model="m",
        system="",
        messages=[
            UserMessage(parts=[TextPart(text="go")]),
            calling,
            ToolResultMessage(tool_call_id="c", name="ls", parts=[TextPart(text="a b")]),
            answering,
        ],
    )

    def assistants(send_back: list[Any] | None) -> list[dict[str, Any]]:
        body = build_chat_request(request, send_back=send_back)
        return [m for m in body["messages"] if m["role"] == "assistant"]

    call = {"id": "c", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    assert assistants([]) == [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "assistant", "content": "Here."},
    ]
    assert assistants(["reasoning_content"])[0] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [call],
        "reasoning_content": "plan",
    }
    assert assistants(["reasoning_details"])[0]["reasoning_details"] == details["reasoning_details"]
    assert assistants(["reasoning_content", "reasoning_details"])[1] == {"role": "assistant", "content": "Here."}
    automatic = assistants(None)  # the reasoning text did not come as reasoning_content: only the details go back
    assert automatic[0] == {"role": "assistant", "content": None, "tool_calls": [call], **details}
    assert automatic[1] == {"role": "assistant", "content": "Here."}


@pytest.mark.parametrize(("think_tags", "text", "thoughts"), [(True, "4", "2+2"), (False, "<think>2+2</think>4", "")])
async def test_think_tags_are_parsed_only_for_the_model_that_has_them(
    think_tags: bool, text: str, thoughts: str
) -> None:
    body = sse_body(
        *[chunk({"content": piece}) for piece in ["<th", "ink>2+", "2</thi", "nk>4"]], chunk(finish="stop"), "[DONE]"
    )
    transport = recording_transport(body, [])
    models = [{"id": "fixture-model", "think_tags": think_tags}]
    async with aclosing(make_provider("openai", "http://vllm.test/v1", transport=transport, models=models)) as p:
        events = await collect(p)

    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == text
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == thoughts
    assert done_of(events).message.text == text


def provider_steps() -> AssistantMessage:
    block_call = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "sf"}}
    block_result = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [
            {"type": "web_search_result", "title": "Weather", "url": "https://w.test", "encrypted_content": "E"}
        ],
    }
    return AssistantMessage(
        parts=[
            ServerToolCallPart(id="srvtoolu_1", name="web_search", arguments='{"query": "sf"}', block=block_call),
            ServerToolResultPart(
                tool_call_id="srvtoolu_1", name="web_search_tool_result", text="Weather", block=block_result
            ),
            ServerToolCallPart(id="call_groq", name="search", arguments='{"query": "sf"}'),
            ServerToolResultPart(tool_call_id="call_groq", name="search", text="Title: Weather"),
            TextPart(text="Sunny."),
        ]
    )


def test_provider_side_tool_blocks_go_back_to_anthropic_verbatim_and_nowhere_else() -> None:
    message = provider_steps()
    call, result = message.parts[0], message.parts[1]
    assert isinstance(call, ServerToolCallPart)
    assert isinstance(result, ServerToolResultPart)
    request = ProviderRequest(model="m", system="", messages=[UserMessage(parts=[TextPart(text="w?")]), message])

    anthropic = build_messages_request(request)["messages"][1]
    openai = build_chat_request(request)["messages"][1]

    assert anthropic == {
        "role": "assistant",
        "content": [call.block, result.block, {"type": "text", "text": "Sunny."}],
    }
    assert openai == {"role": "assistant", "content": "Sunny."}
