"""Compaction in the turn loop, on fake ports: automatic (threshold), reactive (the provider refuses a request as too
long), a failing summary request, a cancel while the summary is written, and a tool result larger than the window.

Each scenario is checked whole: the stored compaction event, the history the next request carries (the summary,
then the recent messages verbatim, with the system prompt and tool schemas byte-identical), and a projection
rebuilt from the log (what a reload sees) holding the same history.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, ConfigDict

from hermes_acp.core import (
    AssistantMessage,
    ContextCompacted,
    ImagePart,
    Message,
    NoticeAdded,
    SessionEvent,
    TextPart,
    ToolResultMessage,
    TurnEnded,
    Usage,
    UserMessage,
)
from hermes_acp.errors import ContextLengthError, ProviderRequestError
from hermes_acp.providers.base import ProviderRequest
from hermes_acp.providers.catalog import Cost
from hermes_acp.providers.scripted import ScriptedProvider, ScriptedReply, text_reply, tool_reply
from hermes_acp.tools.approval import Approval
from hermes_acp.tools.base import Presentation, ToolOutcome, TypedTool
from hermes_acp.tools.context import ToolContext
from hermes_acp.turns import SessionProjection
from hermes_acp.turns.compaction import SUMMARY_SYSTEM_PROMPT
from hermes_acp.turns.context import measure
from hermes_acp.turns.loop import TOO_LONG_ADVICE
from hermes_acp.turns.ports import LiveCompaction, LiveCompactionChunk, LiveUsage
from hermes_acp.turns.projection import DROPPED, SUMMARY_FOOTER, SUMMARY_HEADER
from tests.fakes.server import scripted_model
from tests.fakes.tools import EchoTool, RepeatTool, call

from .support import Loop, open_loop

pytestmark = pytest.mark.anyio

SMALL = scripted_model("scripted:small", context_window=2_000)
"""A 2,000-token window: compacted above 1,600 tokens."""
SUMMARY = "Goal: answer the numbered questions. Files: none. Open tasks: the next question."


def question(n: int) -> str:
    return f"question {n}: " + "q" * 388


def answer(n: int) -> str:
    return f"answer {n}: " + "a" * 390


@dataclass
class Model:
    """Answers summary requests with ``summary`` (a reply, or a function of the request), every other request
    with the next of ``replies``; records both kinds."""

    replies: list[ScriptedReply]
    summary: ScriptedReply | Callable[[ProviderRequest], ScriptedReply] = field(
        default_factory=lambda: text_reply(SUMMARY, usage=None)
    )
    summaries: list[ProviderRequest] = field(default_factory=list)
    turns: list[ProviderRequest] = field(default_factory=list)

    def provider(self) -> ScriptedProvider:
        return ScriptedProvider([self._respond] * 100)

    def _respond(self, request: ProviderRequest) -> ScriptedReply:
        if request.system == SUMMARY_SYSTEM_PROMPT:
            self.summaries.append(request)
            return self.summary(request) if callable(self.summary) else self.summary
        self.turns.append(request)
        return self.replies.pop(0)


def compactions(events: list[SessionEvent]) -> list[ContextCompacted]:
    return [e for e in events if isinstance(e, ContextCompacted)]


def rebuilt(events: list[SessionEvent]) -> SessionProjection:
    projection = SessionProjection()
    for event in events:
        projection.apply(event)
    return projection


def spec_bytes(request: ProviderRequest) -> str:
    return json.dumps([t.model_dump() for t in request.tools], sort_keys=True) + request.system


async def test_past_the_threshold_the_older_turns_are_summarised_and_the_recent_ones_kept_verbatim(
    tmp_path: Path,
) -> None:
    model = Model([text_reply(answer(n), usage=None) for n in range(1, 11)])
    loop = await open_loop(tmp_path, model.provider(), model=SMALL, tools=[EchoTool()])
    for n in range(1, 10):
        assert (await loop.turn(question(n))).stop_reason == "end_turn"
    stored = [s.event for s in await loop.store.load_events("s1")]
    (event,) = compactions(stored)
    assert (event.turn_id, event.trigger, event.method, event.replaced) == ("t9", "threshold", "summary", 12)
    assert (event.summary, event.model_id, event.stubs, event.error) == (SUMMARY, SMALL.id, {}, None)
    assert event.tokens_before > 0.8 * 2_000 > event.tokens_after
    # The request after it: the summary, then turns 7 and 8 and the new question, verbatim.
    request = model.turns[8]
    head = SUMMARY_HEADER + SUMMARY + SUMMARY_FOOTER
    expected: list[Message] = [
        UserMessage(parts=[TextPart(text=head), TextPart(text="\n\n"), TextPart(text=question(7))]),
        AssistantMessage(parts=[TextPart(text=answer(7))]),
        UserMessage(parts=[TextPart(text=question(8))]),
        AssistantMessage(parts=[TextPart(text=answer(8))]),
        UserMessage(parts=[TextPart(text=question(9))]),
    ]
    assert request.messages == expected
    assert spec_bytes(request) == spec_bytes(model.turns[0])  # system prompt and tool schemas, byte-identical
    assert measure(request, None).used <= 0.8 * 2_000
    assert measure(model.turns[7], None).used <= 0.8 * 2_000  # the request before it was under the threshold too
    # A reload (the log folded again) reads the same history, and the log kept every message of the editor's view.
    assert rebuilt(stored).history == loop.recorder.projection.history == [*expected, *model_history_tail(loop)]
    assert sum(isinstance(e, TurnEnded) for e in stored) == 9
    # The summarising model read the older part as a transcript, oldest first, with the prompt that says what to keep.
    (summary_request,) = model.summaries
    transcript = summary_request.messages[0].parts[0]
    assert isinstance(transcript, TextPart) and question(6) in transcript.text and question(7) not in transcript.text
    assert summary_request.tools == [] and summary_request.max_output_tokens == 256


def model_history_tail(loop: Loop) -> list[Message]:
    """What came after the compacted request: the answer to question 9."""
    return [AssistantMessage(parts=[TextPart(text=answer(9))])]


async def test_the_editor_sees_the_compaction_start_stream_and_the_meter_after_it(tmp_path: Path) -> None:
    model = Model([text_reply(answer(n), usage=None) for n in range(1, 11)])
    loop = await open_loop(tmp_path, model.provider(), model=SMALL)
    for n in range(1, 10):
        await loop.turn(question(n))
    (event,) = compactions([s.event for s in await loop.store.load_events("s1")])
    updates = loop.sink.updates
    started = updates.index(LiveCompaction(event.compaction_id, "in_progress"))
    chunks = [u for u in updates if isinstance(u, LiveCompactionChunk)]
    assert "".join(c.text for c in chunks) == SUMMARY and updates.index(chunks[0]) > started
    shown = [e for live, e in loop.sink.events if live and isinstance(e, ContextCompacted)]
    assert shown == [event]  # the finished compaction is rendered from the stored event
    meters = [u for u in updates if isinstance(u, LiveUsage)]
    after = updates.index(chunks[-1])
    first_meter_after = next(u for u in updates[after:] if isinstance(u, LiveUsage))
    assert first_meter_after == LiveUsage(used=event.tokens_after, size=2_000)
    assert len(meters) == 9 + 1  # one after every model call of a turn, one after the compaction


async def test_a_tool_call_is_never_separated_from_its_result(tmp_path: Path) -> None:
    replies: list[ScriptedReply] = []
    for n in range(1, 8):
        replies += [
            tool_reply(call(f"c{n}", "echo", message="e" * 300), usage=None),
            text_reply(answer(n)[:200], usage=None),
        ]
    model = Model(replies)
    loop = await open_loop(tmp_path, model.provider(), model=SMALL, tools=[EchoTool()])
    for n in range(1, 8):
        await loop.turn(question(n)[:200])
    assert compactions([s.event for s in await loop.store.load_events("s1")])
    history = loop.recorder.projection.history
    assert isinstance(history[0], UserMessage) and history[0].parts[0].text.startswith(SUMMARY_HEADER)  # type: ignore[union-attr]
    calls = {c.id for m in history if isinstance(m, AssistantMessage) for c in m.tool_calls}
    results = {m.tool_call_id for m in history if isinstance(m, ToolResultMessage)}
    assert calls == results and calls


async def test_a_provider_refusing_the_request_as_too_long_compacts_and_retries_once(tmp_path: Path) -> None:
    refusal = ContextLengthError("prompt is too long: 5000 tokens > 4096 maximum", provider="scripted", status=400)
    big = scripted_model("scripted:big", context_window=128_000)  # its window is not what the provider enforces
    model = Model([*(text_reply(answer(n), usage=None) for n in range(1, 6)), ScriptedReply([], error=refusal)])
    model.replies.append(text_reply("The answer after compaction.", usage=None))
    model.summary = text_reply(SUMMARY, usage=Usage(input_tokens=700, output_tokens=30))
    loop = await open_loop(tmp_path, model.provider(), model=big)
    for n in range(1, 7):
        result = await loop.turn(question(n))
    assert result.stop_reason == "end_turn"
    assert result.usage == Usage(input_tokens=700, output_tokens=30)  # the summary request is one of the turn's calls
    stored = [s.event for s in await loop.store.load_events("s1")]
    (event,) = compactions(stored)
    assert (event.trigger, event.method, event.turn_id) == ("overflow", "summary", "t6")
    assert not [e for e in stored if isinstance(e, NoticeAdded)]  # the user sees the answer, not an error
    refused, retried = model.turns[5], model.turns[6]
    assert refused.messages[-1] == retried.messages[-1] == UserMessage(parts=[TextPart(text=question(6))])
    assert measure(retried, None).used < 0.7 * measure(refused, None).used
    assert spec_bytes(retried) == spec_bytes(refused)
    assert loop.recorder.projection.history[-1] == AssistantMessage(
        parts=[TextPart(text="The answer after compaction.")]
    )


async def test_a_retry_refused_again_ends_the_turn_saying_what_to_do(tmp_path: Path) -> None:
    refusal = ContextLengthError("the input length exceeds the context length", provider="scripted", status=400)
    model = Model(
        [text_reply(answer(1), usage=None), ScriptedReply([], error=refusal), ScriptedReply([], error=refusal)]
    )
    loop = await open_loop(tmp_path, model.provider())
    await loop.turn(question(1))
    result = await loop.turn(question(2))
    assert result.stop_reason == "end_turn"
    stored = [s.event for s in await loop.store.load_events("s1")]
    (notice,) = [e for e in stored if isinstance(e, NoticeAdded)]
    assert notice.text.startswith("⚠ The model request failed: the input length exceeds the context length")
    assert notice.text.endswith(TOO_LONG_ADVICE)
    assert len(model.turns) == 3  # one retry, no more
    assert len(compactions(stored)) == 1


async def test_a_failing_summary_request_falls_back_to_dropping_the_oldest_turns(tmp_path: Path) -> None:
    failure = ProviderRequestError("the provider rejected the request (HTTP 400: nope)", provider="scripted")
    model = Model([text_reply(answer(n), usage=None) for n in range(1, 11)], summary=ScriptedReply([], error=failure))
    loop = await open_loop(tmp_path, model.provider(), model=SMALL)
    for n in range(1, 10):
        assert (await loop.turn(question(n))).stop_reason == "end_turn"
    stored = [s.event for s in await loop.store.load_events("s1")]
    (event,) = compactions(stored)
    assert (event.method, event.summary, event.replaced) == ("dropped", "", 12)
    assert event.error == "the provider rejected the request (HTTP 400: nope)"
    head = DROPPED.format(count=12)
    assert model.turns[8].messages[0] == UserMessage(
        parts=[TextPart(text=head), TextPart(text="\n\n"), TextPart(text=question(7))]
    )
    assert rebuilt(stored).history == loop.recorder.projection.history  # a reload is compacted the same way
    assert loop.sink.updates.count(LiveCompaction(event.compaction_id, "in_progress")) == 1


async def test_cancel_while_the_summary_is_written_ends_the_turn_cancelled_and_keeps_the_old_history(
    tmp_path: Path,
) -> None:
    hold = anyio.Event()
    model = Model([text_reply(answer(n), usage=None) for n in range(1, 11)], summary=text_reply(SUMMARY, hold=hold))
    loop = await open_loop(tmp_path, model.provider(), model=SMALL)
    for n in range(1, 9):
        await loop.turn(question(n))
    before = list(loop.recorder.projection.history)
    cancelled: list[bool] = []

    async def run() -> None:
        try:
            await loop.turn(question(9))
        except anyio.get_cancelled_exc_class():
            cancelled.append(True)
            raise

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await loop.sink.wait_for(lambda: any(isinstance(u, LiveCompactionChunk) for u in loop.sink.updates))
            group.cancel_scope.cancel()
    assert cancelled == [True]
    stored = [s.event for s in await loop.store.load_events("s1")]
    assert not compactions(stored)
    assert stored[-1] == TurnEnded(turn_id="t9", stop_reason="cancelled")
    assert loop.recorder.projection.history == [*before, UserMessage(parts=[TextPart(text=question(9))])]
    (started,) = [u for u in loop.sink.updates if isinstance(u, LiveCompaction) and u.status == "in_progress"]
    assert loop.sink.updates[-1] == LiveCompaction(started.compaction_id, "cancelled")
    # The next turn compacts again, from the old history.
    hold.set()
    model.replies.insert(0, text_reply(answer(9), usage=None))
    await loop.turn(question(10))
    assert len(compactions([s.event for s in await loop.store.load_events("s1")])) == 1


async def test_a_tool_result_larger_than_the_window_is_cut_to_a_stub(tmp_path: Path) -> None:
    model = Model(
        [
            text_reply(answer(1), usage=None),
            tool_reply(call("c_big", "repeat", message="0123456789", times=4_000), usage=None),
            text_reply("It is a long run of digits.", usage=None),
        ]
    )
    loop = await open_loop(tmp_path, model.provider(), model=SMALL, tools=[RepeatTool()])
    await loop.turn(question(1))
    assert (await loop.turn("repeat the digits")).stop_reason == "end_turn"
    stored = [s.event for s in await loop.store.load_events("s1")]
    (event,) = compactions(stored)
    assert (event.method, event.replaced, list(event.stubs)) == ("summary", 2, ["c_big"])
    stub = event.stubs["c_big"]
    assert stub.startswith("[This repeat result was cut to fit the context window: it had 40,000 characters.")
    assert stub.endswith("\n" + "0123456789" * 40)
    after = model.turns[2]
    assert [type(m).__name__ for m in after.messages] == ["UserMessage", "AssistantMessage", "ToolResultMessage"]
    assert after.messages[2] == ToolResultMessage(tool_call_id="c_big", name="repeat", parts=[TextPart(text=stub)])
    assert measure(after, None).used <= 0.8 * 2_000
    # The log keeps the whole result: the editor's card and a fork still have it.
    (settled,) = [e for e in stored if getattr(e, "tool_call_id", None) == "c_big" and e.kind == "tool_call_settled"]
    assert settled.result is not None and settled.result.parts == [TextPart(text="0123456789" * 4_000)]
    assert rebuilt(stored).history == loop.recorder.projection.history


class _Shot(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int


class ShotTool(TypedTool[_Shot, Any]):
    """Read-only: a screenshot (a tiny PNG) labelled with its number."""

    __test__ = False
    name = "shot"
    description = "Take a screenshot."
    Input = _Shot
    read_only = True

    def present(self, parsed: _Shot, ctx: ToolContext) -> Presentation:
        return Presentation(title=f"Screenshot {parsed.n}", kind="read")

    async def run(self, parsed: _Shot, approval: Approval[Any], ctx: ToolContext) -> ToolOutcome[Any]:
        image = ImagePart(media_type="image/png", data="iVBORw0KGgo=", label=f"shot {parsed.n}")
        return ToolOutcome(parts=[TextPart(text=f"screenshot {parsed.n}"), image])


async def test_the_image_window_still_applies_after_a_compaction(tmp_path: Path) -> None:
    eyes = scripted_model("scripted:eyes", vision=True, context_window=40_000)
    replies: list[ScriptedReply] = []
    for n in range(1, 41):
        replies += [tool_reply(call(f"s{n}", "shot", n=n), usage=None), text_reply(f"seen {n}", usage=None)]
    model = Model(replies)
    loop = await open_loop(tmp_path, model.provider(), model=eyes, tools=[ShotTool()], max_requests=3)
    for n in range(1, 41):
        await loop.turn(f"look {n}: " + "l" * 3_000)
        if model.summaries:
            break
    (summary_request,) = model.summaries
    transcript = summary_request.messages[0].parts[0]
    assert isinstance(transcript, TextPart) and "[image: shot 1]" in transcript.text  # images as their labels
    after = model.turns[-1]
    images = [
        p for m in after.messages if isinstance(m, ToolResultMessage) for p in m.parts if isinstance(p, ImagePart)
    ]
    placeholders = [
        p.text
        for m in after.messages
        for p in m.parts
        if isinstance(p, TextPart) and p.text.startswith("[earlier image")
    ]
    assert len(images) == 3 and placeholders  # the newest three stay images, the older kept ones are placeholders
    assert [i.label for i in images] == [f"shot {n}" for n in (n - 2, n - 1, n)]


async def test_the_meter_after_a_model_call_is_what_the_context_holds_and_what_the_session_cost(
    tmp_path: Path,
) -> None:
    priced = replace(scripted_model("scripted:priced"), input_price=2.0, output_price=10.0)
    provider = ScriptedProvider([text_reply("hi", usage=Usage(input_tokens=1_000, output_tokens=100))] * 2)
    loop = await open_loop(tmp_path, provider, model=priced)
    await loop.turn("hello")
    await loop.turn("again")
    meters = [u for u in loop.sink.updates if isinstance(u, LiveUsage)]
    assert meters == [
        LiveUsage(used=1_100, size=32_000, cost=Cost(amount=0.003)),
        LiveUsage(used=1_100, size=32_000, cost=Cost(amount=0.006)),
    ]
