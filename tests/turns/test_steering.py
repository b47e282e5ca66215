"""Steering messages in the turn loop: taken at the safe points only (docs/architecture.md §6.9) — after a streamed
response, after the calls of a response have settled (a permission question included), and instead of ending the
turn — and reported as not applied when the turn stops first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from hermes_acp.core import (
    AssistantMessage,
    DisplayBlock,
    InputDropped,
    InputQueued,
    SteeringApplied,
    TextBlock,
    TextPart,
    ToolCallSettled,
    ToolResultMessage,
    TurnEnded,
    UserMessage,
)
from hermes_acp.providers.scripted import ScriptedProvider, ScriptedReply, text_reply, tool_reply
from hermes_acp.sessions.steering import SteeringQueue
from hermes_acp.turns.ports import Steer
from tests.fakes.tools import BlockingTool, GuardedWriteTool, call

from .support import Gate, Loop, open_loop

pytestmark = pytest.mark.anyio


async def _steer(loop: Loop, queue: SteeringQueue, text: str, *, turn_id: str = "t1") -> str:
    """As the session steers: stored as queued first, then offered to the turn."""
    input_id = f"in-{text}"
    display: list[DisplayBlock] = [TextBlock(text=text)]
    await loop.recorder.record(InputQueued(input_id=input_id, input_kind="steering", display=display, turn_id=turn_id))
    assert queue.offer(turn_id, Steer(input_id, display))
    return input_id


def _kinds(events: Sequence[object]) -> list[str]:
    return [type(e).__name__ for e in events]


async def _steered(tmp_path: Path, provider: ScriptedProvider, **kwargs: object) -> tuple[Loop, SteeringQueue]:
    loop = await open_loop(tmp_path, provider, **kwargs)  # type: ignore[arg-type]
    queue = SteeringQueue()
    loop.deps = replace(loop.deps, steering=queue.open("t1"))
    return loop, queue


async def test_a_message_sent_while_the_answer_streams_is_applied_after_it_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    hold = anyio.Event()
    provider = ScriptedProvider([ScriptedReply(parts=[TextPart(text="a long answer")], hold=hold), text_reply("ok")])
    loop, queue = await _steered(tmp_path, provider)
    async with anyio.create_task_group() as group:
        group.start_soon(loop.turn, "explain")
        await loop.sink.wait_for(lambda: bool(loop.sink.text))
        await _steer(loop, queue, "shorter please")
        assert not any(isinstance(e, SteeringApplied) for e in await loop.stored()), "never inside a stream"
        hold.set()
    stored = await loop.stored()
    assert _kinds(stored) == [
        "UserPrompted",
        "InputQueued",
        "AssistantMessageStored",
        "SteeringApplied",
        "AssistantMessageStored",
        "TurnEnded",
    ]
    assert [m for m in provider.requests[1].messages] == [
        UserMessage(parts=[TextPart(text="explain")]),
        AssistantMessage(parts=[TextPart(text="a long answer")]),
        UserMessage(parts=[TextPart(text="shorter please")]),
    ]
    applied = next(e for e in stored if isinstance(e, SteeringApplied))
    assert applied.display == [TextBlock(text="shorter please")]
    assert any(live and isinstance(e, SteeringApplied) for live, e in loop.sink.events), "shown live where applied"
    assert queue.turn_id is None, "the turn closed the inbox when it ended"


async def test_a_message_sent_during_a_tool_call_waits_for_its_result(tmp_path: Path) -> None:
    blocker = BlockingTool()
    provider = ScriptedProvider([tool_reply(call("b1", "block", message="x")), text_reply("done")])
    loop, queue = await _steered(tmp_path, provider, tools=[blocker])
    async with anyio.create_task_group() as group:
        group.start_soon(loop.turn, "work")
        with anyio.fail_after(5):
            await blocker.started.wait()
        await _steer(loop, queue, "also check the tests")
        blocker.release.set()
    stored = await loop.stored()
    settled = next(i for i, e in enumerate(stored) if isinstance(e, ToolCallSettled))
    applied = next(i for i, e in enumerate(stored) if isinstance(e, SteeringApplied))
    assert settled < applied, "never between a call and its result"
    history = provider.requests[1].messages
    assert isinstance(history[2], ToolResultMessage)
    assert history[3] == UserMessage(parts=[TextPart(text="also check the tests")])
    assert len(provider.requests) == 2


async def test_a_message_sent_while_a_permission_is_asked_is_applied_once_the_call_settles(tmp_path: Path) -> None:
    writer = GuardedWriteTool()
    gate = Gate(answers=["allow_once"], hold=anyio.Event())
    provider = ScriptedProvider([tool_reply(call("w1", "guarded_write", message="x")), text_reply("written")])
    loop, queue = await _steered(tmp_path, provider, tools=[writer], gate=gate)
    async with anyio.create_task_group() as group:
        group.start_soon(loop.turn, "write it")
        with anyio.fail_after(5):
            await gate.was_asked.wait()
        await _steer(loop, queue, "use British spelling")
        assert gate.hold is not None
        gate.hold.set()
    assert writer.writes == ["x"], "the question was answered, not withdrawn"
    stored = await loop.stored()
    assert _kinds(stored)[-4:] == ["ToolCallSettled", "SteeringApplied", "AssistantMessageStored", "TurnEnded"]
    assert provider.requests[1].messages[-1] == UserMessage(parts=[TextPart(text="use British spelling")])


async def test_a_message_that_arrives_before_the_first_request_goes_with_the_prompt(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("first"), text_reply("second")])
    loop, queue = await _steered(tmp_path, provider)
    await _steer(loop, queue, "and then?")
    result = await loop.turn("go")
    assert result.stop_reason == "end_turn"
    stored = await loop.stored()
    assert _kinds(stored) == [
        "InputQueued",
        "UserPrompted",
        "SteeringApplied",
        "AssistantMessageStored",
        "TurnEnded",
    ]
    assert len(provider.requests) == 1
    assert provider.requests[0].messages == [
        UserMessage(parts=[TextPart(text="go"), TextPart(text="\n\n"), TextPart(text="and then?")])
    ]
    assert queue.offer("t1", Steer("late", [TextBlock(text="too late")])) is False, "the turn ended: no more"


async def test_waiting_messages_are_reported_not_applied_when_the_turn_is_cancelled(tmp_path: Path) -> None:
    blocker = BlockingTool()
    provider = ScriptedProvider([tool_reply(call("b1", "block", message="x"))])
    loop, queue = await _steered(tmp_path, provider, tools=[blocker])
    async with anyio.create_task_group() as group:

        async def turn() -> None:
            with pytest.raises(anyio.get_cancelled_exc_class()):
                await loop.turn("work")

        group.start_soon(turn)
        with anyio.fail_after(5):
            await blocker.started.wait()
        input_id = await _steer(loop, queue, "stop soon")
        group.cancel_scope.cancel()
    stored = await loop.stored()
    dropped = [e for e in stored if isinstance(e, InputDropped)]
    assert [(d.input_id, d.input_kind) for d in dropped] == [(input_id, "steering")]
    assert dropped[0].text == (
        "⚠ Steering message not applied: the turn it was sent to was cancelled first. It said: «stop soon»"
    )
    assert isinstance(stored[-1], TurnEnded) and stored[-1].stop_reason == "cancelled"
    assert not loop.recorder.projection.pending_inputs


async def test_a_turn_at_its_request_limit_reports_the_waiting_message(tmp_path: Path) -> None:
    blocker = BlockingTool()
    provider = ScriptedProvider([tool_reply(call("b1", "block", message="x"))])
    loop, queue = await _steered(tmp_path, provider, tools=[blocker], max_requests=1)
    async with anyio.create_task_group() as group:
        group.start_soon(loop.turn, "work")
        with anyio.fail_after(5):
            await blocker.started.wait()
        await _steer(loop, queue, "one more thing")
        blocker.release.set()
    stored = await loop.stored()
    assert _kinds(stored)[-2:] == ["InputDropped", "TurnEnded"]
    dropped = stored[-2]
    assert isinstance(dropped, InputDropped)
    assert "the turn reached its limit of 1 model requests first" in dropped.text
    assert len(provider.requests) == 1
