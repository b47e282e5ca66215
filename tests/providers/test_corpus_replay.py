"""Every recorded provider stream of ``corpus/`` through the real providers, over HTTP, cut into tiny pieces.

The scripted model server serves each recording byte for byte, in HTTP chunks of exactly three bytes (so every
multi-byte character, CRLF, ``data:`` prefix and JSON escape is split somewhere) and in two reproducible random
cuttings; httpx hands the provider the body in pieces no larger than those chunks. For each recording the test
compares, with the note's ``expected`` block:

(a) what the turn produces: the text and thought deltas, the tool calls (ids, names, arguments) both as deltas
    and in the final message, the stop reason, the usage, the error (and whether output preceded it), the
    reasoning blocks and what the provider ran on its own side;
(b) what the next request sends back: the assistant message in the follow-up request body (tool results when
    the answer called tools, else a new user message), exactly (nothing more, nothing less).

Cases whose streams carry what may go back (DeepSeek, xAI, GLM, OpenRouter) or need ``think_tags`` (the R1 model
with inline ``<think>``) run with the settings the README recommends (``send_back`` unset: what the stream carried
goes back, from a loopback host that is not the service's, as through a proxy) and again without them ("plain").
"""

from __future__ import annotations

import json
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from fixtures.model_server import ModelServer, serve_model_server
from hermes_acp.core import (
    AssistantMessage,
    Message,
    ServerToolCallPart,
    ServerToolResultPart,
    TextPart,
    ThinkingPart,
    ToolResultMessage,
    UserMessage,
)
from hermes_acp.errors import ProviderError
from hermes_acp.providers.base import (
    ProviderEvent,
    ProviderRequest,
    ResponseDone,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolSpec,
)

from .corpus_cases import (
    CASES,
    FOLLOW_UP_TEXT,
    Case,
    Recording,
    Settings,
    editor_view,
    openai_sent_back,
    provider_options,
    recorded_blocks,
    recorded_reasoning_content,
    scenario,
    sent_back_blocks,
    sse_payloads,
)
from .support import RecordingSleep, make_provider

pytestmark = pytest.mark.anyio

CHUNKINGS = {"3-bytes": (3, None), "random-a": (64, 1), "random-b": (256, 2)}
"""HTTP chunk sizes: exactly 3 bytes, or drawn from 1..N with a seed (every cutting includes 1- and 2-byte pieces)."""
MAX_RETRIES = 2
SYSTEM = "You are a coding agent."
TOOLS = [ToolSpec(name="read_file", description="Read a file.", input_schema={"type": "object", "properties": {}})]
UNKNOWN_TOOL = "Error (invalid_arguments): no such tool"

RUNS = [
    pytest.param(case, chunking, settings, id=f"{case.id}-{chunking}-{settings}")
    for case in CASES
    for chunking in CHUNKINGS
    for settings in (["recommended", "plain"] if case.has_recommended_settings else ["recommended"])
    if settings == "recommended" or chunking == "random-a"
]


@dataclass
class Outcome:
    """One response as a consumer saw it: its events, and the error that ended it, if any."""

    events: list[ProviderEvent] = field(default_factory=list)
    error: ProviderError | None = None

    @property
    def done(self) -> ResponseDone | None:
        finals = [e for e in self.events if isinstance(e, ResponseDone)]
        assert len(finals) <= 1
        return finals[0] if finals else None

    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, TextDelta))

    def thoughts(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, ThinkingDelta))

    def streamed_calls(self) -> list[dict[str, str]]:
        calls: dict[int, dict[str, str]] = {}
        for event in self.events:
            if isinstance(event, ToolCallDelta):
                call = calls.setdefault(event.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = call["id"] or event.id or ""
                call["name"] = call["name"] or event.name or ""
                call["arguments"] += event.arguments
        return [calls[index] for index in sorted(calls)]


async def stream_once(provider: Any, request: ProviderRequest) -> Outcome:
    outcome = Outcome()
    with anyio.fail_after(60):
        try:
            async with aclosing(provider.stream(request)) as events:
                async for event in events:
                    outcome.events.append(event)
        except ProviderError as exc:
            outcome.error = exc
    return outcome


def usage_of(done: ResponseDone) -> dict[str, int] | None:
    usage = done.usage
    if usage is None:
        return None
    return {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "cached_read": usage.cached_read_tokens,
        "cache_write": usage.cache_write_tokens,
        "thought": usage.thought_tokens,
    }


def thinking_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ThinkingPart) and part.redacted:
            blocks.append({"type": "redacted_thinking", "data": part.signature})
        elif isinstance(part, ThinkingPart) and part.signature:
            blocks.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
    return blocks


def check_error(outcome: Outcome, expected: dict[str, Any]) -> None:
    assert outcome.done is None
    assert outcome.error is not None, "the stream should have failed"
    assert expected["error"]["message"][:200] in str(outcome.error)
    shown = [e for e in outcome.events if isinstance(e, TextDelta | ThinkingDelta | ToolCallDelta)]
    assert bool(shown) == expected["output_before_error"]


def check_editor_view(case: Case, recording: Recording, outcome: Outcome, *, settings: Settings, paused: bool) -> None:
    """(a): what the turn produced, against the note."""
    expected = recording.expected
    text, thoughts = editor_view(recording, think_tags=settings == "recommended" and case.think_tags)
    if paused:  # the provider continued the paused answer; the scripted answer is the continuation
        text += FOLLOW_UP_TEXT
    assert outcome.text() == text
    assert outcome.thoughts() == thoughts
    if expected["error"] is not None:
        check_error(outcome, expected)
        return
    assert outcome.error is None, outcome.error
    done = outcome.done
    assert done is not None
    message = done.message
    assert message.text == text
    assert "".join(p.text for p in message.parts if isinstance(p, ThinkingPart)) == thoughts
    final_calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls]
    assert final_calls == expected["tool_calls"]
    assert outcome.streamed_calls() == expected["tool_calls"]
    if not paused:
        assert done.stop_reason == expected["stop"]
        assert usage_of(done) == expected["usage"]
    if case.kind == "anthropic":
        assert thinking_blocks(message) == expected["thinking_blocks"]
        check_anthropic_server_tools(recording, message)
    else:
        check_openai_provider_side(recording, message)


def check_anthropic_server_tools(recording: Recording, message: AssistantMessage) -> None:
    """Anthropic's own tools are kept as neutral parts, each with its block exactly as recorded."""
    blocks = recorded_blocks(recording.file)
    calls = [b for b in blocks if b["type"].endswith("_tool_use") and b["type"] != "tool_use"]
    results = [b for b in blocks if b["type"].endswith("_tool_result")]
    kept_calls = [p for p in message.parts if isinstance(p, ServerToolCallPart)]
    kept_results = [p for p in message.parts if isinstance(p, ServerToolResultPart)]
    assert [(p.id, p.name, p.block) for p in kept_calls] == [(b["id"], b["name"], b) for b in calls]
    assert [(p.tool_call_id, p.block) for p in kept_results] == [(b["tool_use_id"], b) for b in results]
    for part in kept_results:
        assert part.text, "a server tool's card says what it found"


def check_openai_provider_side(recording: Recording, message: AssistantMessage) -> None:
    """Groq's executed tools become neutral parts; what may go back is kept as it came (``send_back`` decides only
    what is sent)."""
    payloads = sse_payloads(recording.file)
    executed = {
        tool["index"]: tool
        for payload in payloads
        for choice in payload.get("choices") or []
        for tool in (choice.get("delta") or {}).get("executed_tools") or []
    }
    calls = [p for p in message.parts if isinstance(p, ServerToolCallPart)]
    results = [p for p in message.parts if isinstance(p, ServerToolResultPart)]
    assert [(c.name, c.arguments, c.block) for c in calls] == [
        (tool["type"], tool["arguments"], None) for tool in executed.values()
    ]
    assert [r.tool_call_id for r in results] == [c.id for c in calls]
    assert all(r.text and r.block is None for r in results)
    details = [
        detail
        for payload in payloads
        for choice in payload.get("choices") or []
        for detail in (choice.get("delta") or {}).get("reasoning_details") or []
    ]
    reasoning = recorded_reasoning_content(recording)
    assert (message.echo or {}).get("reasoning_content") == (reasoning or None)
    kept = (message.echo or {}).get("reasoning_details")
    if not details:
        assert kept is None
        return
    assert kept is not None
    assert [d["index"] for d in kept] == sorted({d["index"] for d in details})
    for merged in kept:
        fragments = [d for d in details if d["index"] == merged["index"]]
        for key in ("text", "data", "signature"):
            assert merged.get(key, "") == "".join(d.get(key) or "" for d in fragments)
        assert merged["type"] == fragments[0]["type"]


def next_history(history: list[Message], done: ResponseDone) -> tuple[list[Message], bool]:
    """The history after ``done``, and whether it ends with tool results (the model's turn goes on)."""
    history = [*history, done.message]
    calls = done.message.tool_calls
    for call in calls:
        history.append(
            ToolResultMessage(tool_call_id=call.id, name=call.name, parts=[TextPart(text=UNKNOWN_TOOL)], is_error=True)
        )
    return history, bool(calls)


def sent_assistants(server: ModelServer, index: int) -> list[Any]:
    body = server.requests()[index].body
    assert isinstance(body, dict)
    return [m for m in body["messages"] if m["role"] == "assistant"]


def check_sent_back(
    case: Case, server: ModelServer, successes: list[Recording], index: int, settings: Settings
) -> None:
    """(b): the assistant messages in request ``index`` are exactly what the answers so far must send back."""
    recommended = settings == "recommended"
    sent = sent_assistants(server, index)
    if case.kind == "anthropic":
        wanted = [{"role": "assistant", "content": sent_back_blocks(r.file)} for r in successes]
        assert sent == [w for w in wanted if w["content"]]
        return
    think_tags = recommended and case.think_tags
    expected = [openai_sent_back(r, automatic=recommended, think_tags=think_tags) for r in successes]
    assert sent == [m for m in expected if m is not None]


@pytest.mark.parametrize(("case", "chunking", "settings"), RUNS)
async def test_a_recorded_stream_replays_faithfully(case: Case, chunking: str, settings: Settings) -> None:
    chunk_bytes, seed = CHUNKINGS[chunking]
    sleep = RecordingSleep()
    served = scenario(case, chunk_bytes=chunk_bytes, seed=seed, attempts=MAX_RETRIES + 1)
    async with serve_model_server(served) as server:
        base_url = server.openai_base_url if case.kind == "openai" else server.base_url
        provider = make_provider(
            case.kind, base_url, sleep=sleep, max_retries=MAX_RETRIES, **provider_options(case, settings)
        )
        async with aclosing(provider):
            await replay(case, settings, server, provider, sleep)


async def replay(case: Case, settings: Settings, server: ModelServer, provider: Any, sleep: RecordingSleep) -> None:
    history: list[Message] = [UserMessage(parts=[TextPart(text="Go.")])]
    successes: list[Recording] = []
    calls_made = paused = False
    for recording in case.recordings:
        before = len(server.requests())
        request = ProviderRequest(model=case.id, system=SYSTEM, messages=history, tools=TOOLS)
        outcome = await stream_once(provider, request)
        paused = recording.expected["stop"] == "pause_turn"
        check_editor_view(case, recording, outcome, settings=settings, paused=paused)
        if successes:  # this request carried the answers so far
            check_sent_back(case, server, successes, before, settings)
        if paused:  # the continuation re-sent the request with the paused answer as the last assistant message
            continuation = server.requests()[before + 1].body
            assert isinstance(continuation, dict)
            assert continuation["messages"][-1] == {"role": "assistant", "content": sent_back_blocks(recording.file)}
        if case.repeat:  # a transient error at the start is retried, the recording served each time
            assert len(server.requests()) == MAX_RETRIES + 1
            assert len(sleep.delays) == MAX_RETRIES
            return
        if outcome.done is None:
            return
        successes.append(recording)
        history, calls_made = next_history(history, outcome.done)
    if not calls_made:
        history.append(UserMessage(parts=[TextPart(text="And now?")]))
    request = ProviderRequest(model=case.id, system=SYSTEM, messages=history, tools=TOOLS)
    follow_up = await stream_once(provider, request)
    assert follow_up.text() == FOLLOW_UP_TEXT
    last_request = len(server.requests()) - 1
    if paused:
        content = sent_assistants(server, last_request)[-1]["content"]
        assert content == [*sent_back_blocks(case.recordings[-1].file), {"type": "text", "text": FOLLOW_UP_TEXT}]
        return
    check_sent_back(case, server, successes, last_request, settings)


def test_every_recording_of_the_corpus_is_replayed() -> None:
    files = {path.name for path in (CASES[0].recordings[0].file.parent).glob("*.sse")}
    replayed = {recording.file.name for case in CASES for recording in case.recordings}
    assert replayed == files
    assert len(CASES) == 37
    assert json.loads((CASES[0].recordings[0].file.parent / f"{CASES[0].id}.json").read_text())["id"] == CASES[0].id
