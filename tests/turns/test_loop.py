"""The turn loop on fake ports, one scenario per test, each checked whole: every stored event, and the model
history the next request carries (or the projection holds).

Message ids are generated, so stored events are compared with ids made stable (``m1``, ``m2``… in order of first
appearance); tool-call ids are the script's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
import structlog
from inline_snapshot import snapshot

from hermes_acp.core import (
    AssistantMessage,
    AssistantMessageStored,
    DiffBlock,
    DisplayBlock,
    Location,
    ResourceLinkBlock,
    SessionEvent,
    TextBlock,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolCallRunning,
    ToolCallSettled,
    ToolCallStarted,
    ToolResultMessage,
    TurnEnded,
    Usage,
    UserMessage,
    UserPrompted,
)
from hermes_acp.errors import StorageError
from hermes_acp.providers.scripted import ScriptedProvider, ScriptedReply, text_reply, tool_reply
from hermes_acp.tools.base import ToolOutcome
from hermes_acp.turns import run_turn
from hermes_acp.turns.loop import settle
from hermes_acp.turns.phases import BetweenRequests
from hermes_acp.turns.settlements import CANCELLED, NOT_RUN, STORE_FAILED
from hermes_acp.turns.state import TurnState
from tests.fakes.tools import BlockingTool, EchoTool, GuardedWriteTool, call

from .support import MODEL, USAGE, Gate, Loop, history, open_loop

pytestmark = pytest.mark.anyio


def prompted(turn: str, message_id: str, text: str, *, for_model: bool = True) -> UserPrompted:
    return UserPrompted(
        turn_id=turn,
        message_id=message_id,
        display=[TextBlock(text=text)],
        message=UserMessage(parts=[TextPart(text=text)]),
        for_model=for_model,
    )


def interrupted(turn: str, message_id: str, text: str) -> AssistantMessageStored:
    return AssistantMessageStored(
        turn_id=turn,
        message_id=message_id,
        message=AssistantMessage(parts=[TextPart(text=text)]),
        model_id=MODEL.id,
        interrupted=True,
    )


def answered(turn: str, message_id: str, *parts: TextPart | ThinkingPart | ToolCallPart) -> AssistantMessageStored:
    return AssistantMessageStored(
        turn_id=turn,
        message_id=message_id,
        message=AssistantMessage(parts=list(parts)),
        model_id=MODEL.id,
        usage=USAGE,
        context_window=MODEL.context_window,
    )


def started(turn: str, tool_call: ToolCallPart, title: str, kind: Any, **fields: Any) -> ToolCallStarted:
    return ToolCallStarted(
        turn_id=turn,
        tool_call_id=tool_call.id,
        name=tool_call.name,
        title=title,
        tool_kind=kind,
        raw_input=tool_call.parsed_arguments(),
        marks_run=True,
        **fields,
    )


def settled(turn: str, tool_call: ToolCallPart, text: str, *, failed: bool = False, **fields: Any) -> ToolCallSettled:
    return ToolCallSettled(
        turn_id=turn,
        tool_call_id=tool_call.id,
        status="failed" if failed else "completed",
        content=[TextBlock(text=text)],
        result=ToolResultMessage(
            tool_call_id=tool_call.id, name=tool_call.name, parts=[TextPart(text=text)], is_error=failed
        ),
        **fields,
    )


def ended(turn: str, stop: Any = "end_turn", usage: Usage = USAGE) -> TurnEnded:
    return TurnEnded(turn_id=turn, stop_reason=stop, usage=usage)


def user(text: str) -> UserMessage:
    return UserMessage(parts=[TextPart(text=text)])


def assistant(*parts: TextPart | ThinkingPart | ToolCallPart) -> AssistantMessage:
    return AssistantMessage(parts=list(parts))


def result(tool_call: ToolCallPart, text: str, *, failed: bool = False) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=tool_call.id, name=tool_call.name, parts=[TextPart(text=text)], is_error=failed
    )


async def cancel_when(loop: Loop, text: str, ready: Callable[[], bool]) -> None:
    """Run a turn and cancel it (as ``session/cancel`` does) once ``ready()`` holds; the cancellation must come
    out of the turn, after it settled."""
    cancelled: list[bool] = []

    async def run() -> None:
        try:
            await loop.turn(text)
        except anyio.get_cancelled_exc_class():
            cancelled.append(True)
            raise

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await loop.sink.wait_for(ready)
            group.cancel_scope.cancel()
    assert cancelled == [True]


async def test_plain_text(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("Hello there.")])
    loop = await open_loop(tmp_path, provider)
    response = await loop.turn("hi")
    assert response.stop_reason == "end_turn"
    assert history(await loop.stored()) == snapshot(
        [
            {
                "kind": "user_prompted",
                "turn_id": "t1",
                "message_id": "m1",
                "display": [{"text": "hi"}],
                "message": {"parts": [{"text": "hi"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": "t1",
                "message_id": "m2",
                "message": {"parts": [{"text": "Hello there."}]},
                "model_id": "scripted:model",
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "context_window": 32000,
            },
            {
                "kind": "turn_ended",
                "turn_id": "t1",
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 100, "output_tokens": 20},
            },
        ]
    )
    assert loop.recorder.projection.history == [user("hi"), assistant(TextPart(text="Hello there."))]
    assert loop.sink.text == "Hello there."
    assert loop.shown() == await loop.stored(), "every stored event was emitted, in order"


async def test_tool_calls_run_in_order_each_stored_as_running_then_settled(tmp_path: Path) -> None:
    echo_a, echo_b = call("call_A", "echo", message="a"), call("call_B", "echo", message="b")
    provider = ScriptedProvider([tool_reply(echo_a, echo_b, text="Echoing."), text_reply("Both echoed.")])
    echo = EchoTool()
    loop = await open_loop(tmp_path, provider, tools=[echo])
    response = await loop.turn("echo twice")
    assert response == type(response)(stop_reason="end_turn", usage=USAGE + USAGE)
    assert echo.runs == ["a", "b"]
    assert history(await loop.stored()) == snapshot(
        [
            {
                "kind": "user_prompted",
                "turn_id": "t1",
                "message_id": "m1",
                "display": [{"text": "echo twice"}],
                "message": {"parts": [{"text": "echo twice"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": "t1",
                "message_id": "m2",
                "message": {
                    "parts": [
                        {"text": "Echoing."},
                        {"id": "call_A", "name": "echo", "arguments": '{"message": "a"}'},
                        {"id": "call_B", "name": "echo", "arguments": '{"message": "b"}'},
                    ]
                },
                "model_id": "scripted:model",
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "context_window": 32000,
            },
            {
                "kind": "tool_call_started",
                "turn_id": "t1",
                "tool_call_id": "call_A",
                "name": "echo",
                "title": "Echo a",
                "tool_kind": "other",
                "raw_input": {"message": "a"},
                "marks_run": True,
            },
            {
                "kind": "tool_call_started",
                "turn_id": "t1",
                "tool_call_id": "call_B",
                "name": "echo",
                "title": "Echo b",
                "tool_kind": "other",
                "raw_input": {"message": "b"},
                "marks_run": True,
            },
            {"kind": "tool_call_running", "turn_id": "t1", "tool_call_id": "call_A"},
            {
                "kind": "tool_call_settled",
                "turn_id": "t1",
                "tool_call_id": "call_A",
                "status": "completed",
                "content": [{"text": "echo: a"}],
                "raw_output": {"echoed": "a"},
                "result": {"tool_call_id": "call_A", "name": "echo", "parts": [{"text": "echo: a"}]},
            },
            {"kind": "tool_call_running", "turn_id": "t1", "tool_call_id": "call_B"},
            {
                "kind": "tool_call_settled",
                "turn_id": "t1",
                "tool_call_id": "call_B",
                "status": "completed",
                "content": [{"text": "echo: b"}],
                "raw_output": {"echoed": "b"},
                "result": {"tool_call_id": "call_B", "name": "echo", "parts": [{"text": "echo: b"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": "t1",
                "message_id": "m3",
                "message": {"parts": [{"text": "Both echoed."}]},
                "model_id": "scripted:model",
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "context_window": 32000,
            },
            {
                "kind": "turn_ended",
                "turn_id": "t1",
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 200, "output_tokens": 40},
            },
        ]
    )
    assert provider.requests[1].messages == [
        user("echo twice"),
        assistant(TextPart(text="Echoing."), echo_a, echo_b),
        result(echo_a, "echo: a"),
        result(echo_b, "echo: b"),
    ]


async def test_a_denied_call_is_not_run_and_the_model_reads_why(tmp_path: Path) -> None:
    write = call("w1", "guarded_write", message="hello")
    provider = ScriptedProvider([tool_reply(write), text_reply("Understood.")])
    writer = GuardedWriteTool()
    loop = await open_loop(tmp_path, provider, tools=[writer], gate=Gate(answers=["reject_once"]))
    await loop.turn("write it")
    denial = "Error (permission_denied): the user refused this call; it was not run"
    assert writer.writes == []
    assert history(await loop.stored()) == snapshot(
        [
            {
                "kind": "user_prompted",
                "turn_id": "t1",
                "message_id": "m1",
                "display": [{"text": "write it"}],
                "message": {"parts": [{"text": "write it"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": "t1",
                "message_id": "m2",
                "message": {"parts": [{"id": "w1", "name": "guarded_write", "arguments": '{"message": "hello"}'}]},
                "model_id": "scripted:model",
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "context_window": 32000,
            },
            {
                "kind": "tool_call_started",
                "turn_id": "t1",
                "tool_call_id": "w1",
                "name": "guarded_write",
                "title": "Write notes.txt",
                "tool_kind": "edit",
                "raw_input": {"message": "hello"},
                "marks_run": True,
            },
            {
                "kind": "permission_resolved",
                "turn_id": "t1",
                "tool_call_id": "w1",
                "outcome": "reject_once",
                "scope": "edit",
            },
            {
                "kind": "tool_call_settled",
                "turn_id": "t1",
                "tool_call_id": "w1",
                "status": "failed",
                "content": [{"text": "Error (permission_denied): the user refused this call; it was not run"}],
                "result": {
                    "tool_call_id": "w1",
                    "name": "guarded_write",
                    "parts": [{"text": "Error (permission_denied): the user refused this call; it was not run"}],
                    "is_error": True,
                },
                "error_code": "permission_denied",
            },
            {
                "kind": "assistant_message",
                "turn_id": "t1",
                "message_id": "m3",
                "message": {"parts": [{"text": "Understood."}]},
                "model_id": "scripted:model",
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "context_window": 32000,
            },
            {
                "kind": "turn_ended",
                "turn_id": "t1",
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 200, "output_tokens": 40},
            },
        ]
    )
    assert provider.requests[1].messages == [user("write it"), assistant(write), result(write, denial, failed=True)]


async def test_cancel_while_converting_keeps_the_prompt_for_the_transcript_only(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("outside")
    hold = anyio.Event()
    gate = Gate(hold=hold)
    loop = await open_loop(workspace, ScriptedProvider([]), gate=gate)
    display: list[DisplayBlock] = [ResourceLinkBlock(uri=outside.as_uri(), name="outside.txt")]
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(run_turn, TurnState(turn_id="t1"), loop.deps, display)
            await gate.was_asked.wait()
            group.cancel_scope.cancel()
    hold.set()
    stored = await loop.stored()
    (read_id,) = {e.tool_call_id for e in stored if isinstance(e, ToolCallStarted)}
    assert stored == [
        ToolCallStarted(
            turn_id="t1",
            tool_call_id=read_id,
            name="read_attachment",
            title=gate.asked[0].title,
            tool_kind="read",
            raw_input=gate.asked[0].raw_input,
            locations=[Location(path=str(outside))],
            marks_run=True,
        ),
        UserPrompted(
            turn_id="t1",
            message_id="m1",
            display=display,
            message=user(""),
            for_model=False,
        ),
        ToolCallSettled(
            turn_id="t1",
            tool_call_id=read_id,
            status="failed",
            content=[TextBlock(text=NOT_RUN[1])],
            result=None,
            error_code="not_run",
        ),
        ended("t1", "cancelled", Usage()),
    ]
    assert loop.recorder.projection.history == [], "the model never got the prompt"


async def test_cancel_while_streaming_stores_the_text_shown_as_interrupted(tmp_path: Path) -> None:
    hold = anyio.Event()
    provider = ScriptedProvider([ScriptedReply(parts=[TextPart(text="A long answer")], hold=hold)])
    loop = await open_loop(tmp_path, provider)
    await cancel_when(loop, "go", lambda: bool(loop.sink.updates))
    assert loop.sink.text == "A long a", "one chunk of 8 characters, then the stream waited"
    assert history(await loop.stored()) == snapshot(
        [
            {
                "kind": "user_prompted",
                "turn_id": "t1",
                "message_id": "m1",
                "display": [{"text": "go"}],
                "message": {"parts": [{"text": "go"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": "t1",
                "message_id": "m2",
                "message": {"parts": [{"text": "A long a"}]},
                "model_id": "scripted:model",
                "interrupted": True,
            },
            {"kind": "turn_ended", "turn_id": "t1", "stop_reason": "cancelled"},
        ]
    )
    assert loop.recorder.projection.history == [user("go"), assistant(TextPart(text="A long a"))]


async def test_cancel_while_a_tool_runs_cancels_it_and_the_rest_are_not_run(tmp_path: Path) -> None:
    first, second = call("b1", "block", message="x"), call("b2", "block", message="y")
    blocker = BlockingTool()
    loop = await open_loop(tmp_path, ScriptedProvider([tool_reply(first, second)]), tools=[blocker])
    await cancel_when(loop, "run", blocker.started.is_set)
    assert blocker.cancelled
    assert history(await loop.stored()) == snapshot(
        [
            {
                "kind": "user_prompted",
                "turn_id": "t1",
                "message_id": "m1",
                "display": [{"text": "run"}],
                "message": {"parts": [{"text": "run"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": "t1",
                "message_id": "m2",
                "message": {
                    "parts": [
                        {"id": "b1", "name": "block", "arguments": '{"message": "x"}'},
                        {"id": "b2", "name": "block", "arguments": '{"message": "y"}'},
                    ]
                },
                "model_id": "scripted:model",
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "context_window": 32000,
            },
            {
                "kind": "tool_call_started",
                "turn_id": "t1",
                "tool_call_id": "b1",
                "name": "block",
                "title": "Block",
                "tool_kind": "execute",
                "raw_input": {"message": "x"},
                "marks_run": True,
            },
            {
                "kind": "tool_call_started",
                "turn_id": "t1",
                "tool_call_id": "b2",
                "name": "block",
                "title": "Block",
                "tool_kind": "execute",
                "raw_input": {"message": "y"},
                "marks_run": True,
            },
            {"kind": "tool_call_running", "turn_id": "t1", "tool_call_id": "b1"},
            {
                "kind": "tool_call_settled",
                "turn_id": "t1",
                "tool_call_id": "b1",
                "status": "failed",
                "content": [
                    {"text": "Cancelled: the turn was stopped before this call finished; its outcome may be partial."}
                ],
                "result": {
                    "tool_call_id": "b1",
                    "name": "block",
                    "parts": [
                        {
                            "text": (
                                "Cancelled: the turn was stopped before this call finished; its outcome may be partial."
                            )
                        }
                    ],
                    "is_error": True,
                },
                "error_code": "cancelled",
            },
            {
                "kind": "tool_call_settled",
                "turn_id": "t1",
                "tool_call_id": "b2",
                "status": "failed",
                "content": [{"text": "Not run: the turn was stopped before this call started."}],
                "result": {
                    "tool_call_id": "b2",
                    "name": "block",
                    "parts": [{"text": "Not run: the turn was stopped before this call started."}],
                    "is_error": True,
                },
                "error_code": "not_run",
            },
            {
                "kind": "turn_ended",
                "turn_id": "t1",
                "stop_reason": "cancelled",
                "usage": {"input_tokens": 100, "output_tokens": 20},
            },
        ]
    )
    assert loop.recorder.projection.history == [
        user("run"),
        assistant(first, second),
        result(first, CANCELLED[1], failed=True),
        result(second, NOT_RUN[1], failed=True),
    ]


async def test_cancel_while_permission_is_asked_leaves_the_call_not_run(tmp_path: Path) -> None:
    write = call("w1", "guarded_write", message="x")
    writer = GuardedWriteTool()
    gate = Gate(hold=anyio.Event())
    loop = await open_loop(tmp_path, ScriptedProvider([tool_reply(write)]), tools=[writer], gate=gate)
    await cancel_when(loop, "write", lambda: bool(gate.asked))
    assert writer.writes == []
    assert history(await loop.stored()) == snapshot(
        [
            {
                "kind": "user_prompted",
                "turn_id": "t1",
                "message_id": "m1",
                "display": [{"text": "write"}],
                "message": {"parts": [{"text": "write"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": "t1",
                "message_id": "m2",
                "message": {"parts": [{"id": "w1", "name": "guarded_write", "arguments": '{"message": "x"}'}]},
                "model_id": "scripted:model",
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "context_window": 32000,
            },
            {
                "kind": "tool_call_started",
                "turn_id": "t1",
                "tool_call_id": "w1",
                "name": "guarded_write",
                "title": "Write notes.txt",
                "tool_kind": "edit",
                "raw_input": {"message": "x"},
                "marks_run": True,
            },
            {
                "kind": "tool_call_settled",
                "turn_id": "t1",
                "tool_call_id": "w1",
                "status": "failed",
                "content": [{"text": "Not run: the turn was stopped before this call started."}],
                "result": {
                    "tool_call_id": "w1",
                    "name": "guarded_write",
                    "parts": [{"text": "Not run: the turn was stopped before this call started."}],
                    "is_error": True,
                },
                "error_code": "not_run",
            },
            {
                "kind": "turn_ended",
                "turn_id": "t1",
                "stop_reason": "cancelled",
                "usage": {"input_tokens": 100, "output_tokens": 20},
            },
        ]
    )


async def test_the_client_cancelling_a_permission_request_ends_the_turn_cancelled(tmp_path: Path) -> None:
    write = call("w1", "guarded_write", message="x")
    writer = GuardedWriteTool()
    loop = await open_loop(tmp_path, ScriptedProvider([tool_reply(write)]), tools=[writer], gate=Gate(["cancelled"]))
    response = await loop.turn("write")
    assert response.stop_reason == "cancelled"
    assert writer.writes == []
    assert history(await loop.stored()) == snapshot(
        [
            {
                "kind": "user_prompted",
                "turn_id": "t1",
                "message_id": "m1",
                "display": [{"text": "write"}],
                "message": {"parts": [{"text": "write"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": "t1",
                "message_id": "m2",
                "message": {"parts": [{"id": "w1", "name": "guarded_write", "arguments": '{"message": "x"}'}]},
                "model_id": "scripted:model",
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "context_window": 32000,
            },
            {
                "kind": "tool_call_started",
                "turn_id": "t1",
                "tool_call_id": "w1",
                "name": "guarded_write",
                "title": "Write notes.txt",
                "tool_kind": "edit",
                "raw_input": {"message": "x"},
                "marks_run": True,
            },
            {
                "kind": "permission_resolved",
                "turn_id": "t1",
                "tool_call_id": "w1",
                "outcome": "cancelled",
                "scope": "edit",
            },
            {
                "kind": "tool_call_settled",
                "turn_id": "t1",
                "tool_call_id": "w1",
                "status": "failed",
                "content": [{"text": "Not run: the turn was stopped before this call started."}],
                "result": {
                    "tool_call_id": "w1",
                    "name": "guarded_write",
                    "parts": [{"text": "Not run: the turn was stopped before this call started."}],
                    "is_error": True,
                },
                "error_code": "not_run",
            },
            {
                "kind": "turn_ended",
                "turn_id": "t1",
                "stop_reason": "cancelled",
                "usage": {"input_tokens": 100, "output_tokens": 20},
            },
        ]
    )


async def test_settling_between_requests_leaves_nothing_open_to_store(tmp_path: Path) -> None:
    loop = await open_loop(tmp_path, ScriptedProvider([text_reply("ok")]))
    await loop.turn("hi")
    before = await loop.stored()
    stop = TurnEnded(turn_id="t2", stop_reason="cancelled")
    await settle(BetweenRequests(), "cancelled", TurnState(turn_id="t2"), loop.deps, then=[stop])
    assert await loop.stored() == [*before, stop]


async def test_a_stream_broken_mid_way_keeps_what_was_shown_and_says_the_request_failed(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [ScriptedReply(parts=[TextPart(text="Half an answer that")], fail_after_chunks=2), text_reply("Recovered.")]
    )
    loop = await open_loop(tmp_path, provider)
    first = await loop.turn("first")
    second = await loop.turn("second")
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    assert history(await loop.stored()) == snapshot(
        [
            {
                "kind": "user_prompted",
                "turn_id": "t1",
                "message_id": "m1",
                "display": [{"text": "first"}],
                "message": {"parts": [{"text": "first"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": "t1",
                "message_id": "m2",
                "message": {"parts": [{"text": "Half an answer t"}]},
                "model_id": "scripted:model",
                "interrupted": True,
            },
            {
                "kind": "notice_added",
                "turn_id": "t1",
                "message_id": "m3",
                "text": "⚠ The model request failed: scripted provider: stream cut mid-way",
            },
            {"kind": "turn_ended", "turn_id": "t1", "stop_reason": "end_turn"},
            {
                "kind": "user_prompted",
                "turn_id": "t2",
                "message_id": "m4",
                "display": [{"text": "second"}],
                "message": {"parts": [{"text": "second"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": "t2",
                "message_id": "m5",
                "message": {"parts": [{"text": "Recovered."}]},
                "model_id": "scripted:model",
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "context_window": 32000,
            },
            {
                "kind": "turn_ended",
                "turn_id": "t2",
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 100, "output_tokens": 20},
            },
        ]
    )
    assert provider.requests[1].messages == [
        user("first"),
        assistant(TextPart(text="Half an answer t")),
        user("second"),
    ]


async def test_max_tokens_settles_a_cut_off_call_without_running_it(tmp_path: Path) -> None:
    cut = ToolCallPart(id="c1", name="echo", arguments='{"mess')
    echo = EchoTool()
    loop = await open_loop(tmp_path, ScriptedProvider([tool_reply(cut, stop_reason="max_tokens")]), tools=[echo])
    response = await loop.turn("go")
    assert response.stop_reason == "max_tokens"
    assert echo.runs == []
    assert history(await loop.stored()) == snapshot(
        [
            {
                "kind": "user_prompted",
                "turn_id": "t1",
                "message_id": "m1",
                "display": [{"text": "go"}],
                "message": {"parts": [{"text": "go"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": "t1",
                "message_id": "m2",
                "message": {"parts": [{"id": "c1", "name": "echo", "arguments": '{"mess'}]},
                "model_id": "scripted:model",
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "context_window": 32000,
            },
            {
                "kind": "tool_call_started",
                "turn_id": "t1",
                "tool_call_id": "c1",
                "name": "echo",
                "title": "echo",
                "tool_kind": "other",
                "raw_input": '{"mess',
                "marks_run": True,
            },
            {
                "kind": "tool_call_settled",
                "turn_id": "t1",
                "tool_call_id": "c1",
                "status": "failed",
                "content": [
                    {
                        "text": (
                            "Error (invalid_arguments): the response hit the output-token limit, so these arguments"
                            " are cut off; the call was not run"
                        )
                    }
                ],
                "result": {
                    "tool_call_id": "c1",
                    "name": "echo",
                    "parts": [
                        {
                            "text": (
                                "Error (invalid_arguments): the response hit the output-token limit, so these"
                                " arguments are cut off; the call was not run"
                            )
                        }
                    ],
                    "is_error": True,
                },
                "error_code": "invalid_arguments",
            },
            {
                "kind": "turn_ended",
                "turn_id": "t1",
                "stop_reason": "max_tokens",
                "usage": {"input_tokens": 100, "output_tokens": 20},
            },
        ]
    )


def _is(kind: type[SessionEvent]) -> Callable[[Sequence[SessionEvent]], bool]:
    return lambda events: any(isinstance(e, kind) for e in events)


async def test_an_announcement_that_cannot_be_stored_runs_nothing_and_shows_nothing(tmp_path: Path) -> None:
    echo_call = call("call_echo", "echo", message="x")
    provider = ScriptedProvider([tool_reply(echo_call, text="Let me."), text_reply("Again.")])
    echo = EchoTool()
    loop = await open_loop(tmp_path, provider, tools=[echo])
    loop.store.refuse_once(_is(ToolCallStarted))
    with pytest.raises(StorageError) as refused:
        await loop.turn("go")
    assert refused.value.cause == "disk_full"
    assert echo.runs == []
    assert loop.shown() == [prompted("t1", "m1", "go")], "no card: nothing was announced"
    assert await loop.stored() == [prompted("t1", "m1", "go")]
    await loop.turn("again")
    assert echo.runs == [], "never run later either"
    assert history(await loop.stored()) == snapshot(
        [
            {
                "kind": "user_prompted",
                "turn_id": "t1",
                "message_id": "m1",
                "display": [{"text": "go"}],
                "message": {"parts": [{"text": "go"}]},
            },
            {"kind": "turn_ended", "turn_id": "t1", "stop_reason": "cancelled"},
            {
                "kind": "user_prompted",
                "turn_id": "t2",
                "message_id": "m2",
                "display": [{"text": "again"}],
                "message": {"parts": [{"text": "again"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": "t2",
                "message_id": "m3",
                "message": {"parts": [{"text": "Again."}]},
                "model_id": "scripted:model",
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "context_window": 32000,
            },
            {
                "kind": "turn_ended",
                "turn_id": "t2",
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 100, "output_tokens": 20},
            },
        ]
    )
    assert provider.requests[1].messages == [
        UserMessage(parts=[TextPart(text="go"), TextPart(text="\n\n"), TextPart(text="again")])
    ], "the unanswered prompt merges with the next"


async def test_a_run_that_cannot_be_marked_does_not_run_and_live_and_repair_say_not_run(tmp_path: Path) -> None:
    echo_call = call("call_echo", "echo", message="x")
    provider = ScriptedProvider([tool_reply(echo_call), text_reply("Fine.")])
    echo = EchoTool()
    loop = await open_loop(tmp_path, provider, tools=[echo])
    loop.store.refuse_once(_is(ToolCallRunning))
    with pytest.raises(StorageError):
        await loop.turn("go")
    assert echo.runs == []
    not_run = settled("t1", echo_call, NOT_RUN[1], failed=True, error_code="not_run")
    assert loop.shown()[-1] == not_run, "the live card"
    await loop.turn("again")
    assert echo.runs == []
    assert history(await loop.stored()) == snapshot(
        [
            {
                "kind": "user_prompted",
                "turn_id": "t1",
                "message_id": "m1",
                "display": [{"text": "go"}],
                "message": {"parts": [{"text": "go"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": "t1",
                "message_id": "m2",
                "message": {"parts": [{"id": "call_echo", "name": "echo", "arguments": '{"message": "x"}'}]},
                "model_id": "scripted:model",
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "context_window": 32000,
            },
            {
                "kind": "tool_call_started",
                "turn_id": "t1",
                "tool_call_id": "call_echo",
                "name": "echo",
                "title": "Echo x",
                "tool_kind": "other",
                "raw_input": {"message": "x"},
                "marks_run": True,
            },
            {
                "kind": "tool_call_settled",
                "turn_id": "t1",
                "tool_call_id": "call_echo",
                "status": "failed",
                "content": [{"text": "Not run: the turn was stopped before this call started."}],
                "result": {
                    "tool_call_id": "call_echo",
                    "name": "echo",
                    "parts": [{"text": "Not run: the turn was stopped before this call started."}],
                    "is_error": True,
                },
                "error_code": "not_run",
            },
            {"kind": "turn_ended", "turn_id": "t1", "stop_reason": "cancelled"},
            {
                "kind": "user_prompted",
                "turn_id": "t2",
                "message_id": "m3",
                "display": [{"text": "again"}],
                "message": {"parts": [{"text": "again"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": "t2",
                "message_id": "m4",
                "message": {"parts": [{"text": "Fine."}]},
                "model_id": "scripted:model",
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "context_window": 32000,
            },
            {
                "kind": "turn_ended",
                "turn_id": "t2",
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 100, "output_tokens": 20},
            },
        ]
    )


async def test_a_result_that_cannot_be_stored_is_outcome_unknown_live_and_after_the_repair(tmp_path: Path) -> None:
    """The command ran; its result could not be stored. The live card must not say "not run"."""
    first, second = call("call_1", "echo", message="one"), call("call_2", "echo", message="two")
    provider = ScriptedProvider([tool_reply(first, second), text_reply("Fine.")])
    echo = EchoTool()
    loop = await open_loop(tmp_path, provider, tools=[echo])
    loop.store.refuse_once(_is(ToolCallSettled))
    with pytest.raises(StorageError):
        await loop.turn("go")
    assert echo.runs == ["one"]
    unknown = settled("t1", first, STORE_FAILED[1], failed=True, error_code="outcome_unknown")
    not_run = settled("t1", second, NOT_RUN[1], failed=True, error_code="not_run")
    assert loop.shown()[-2:] == [unknown, not_run], "the live cards"
    await loop.turn("again")
    assert echo.runs == ["one"], "not run again"
    assert history(await loop.stored()) == snapshot(
        [
            {
                "kind": "user_prompted",
                "turn_id": "t1",
                "message_id": "m1",
                "display": [{"text": "go"}],
                "message": {"parts": [{"text": "go"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": "t1",
                "message_id": "m2",
                "message": {
                    "parts": [
                        {"id": "call_1", "name": "echo", "arguments": '{"message": "one"}'},
                        {"id": "call_2", "name": "echo", "arguments": '{"message": "two"}'},
                    ]
                },
                "model_id": "scripted:model",
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "context_window": 32000,
            },
            {
                "kind": "tool_call_started",
                "turn_id": "t1",
                "tool_call_id": "call_1",
                "name": "echo",
                "title": "Echo one",
                "tool_kind": "other",
                "raw_input": {"message": "one"},
                "marks_run": True,
            },
            {
                "kind": "tool_call_started",
                "turn_id": "t1",
                "tool_call_id": "call_2",
                "name": "echo",
                "title": "Echo two",
                "tool_kind": "other",
                "raw_input": {"message": "two"},
                "marks_run": True,
            },
            {"kind": "tool_call_running", "turn_id": "t1", "tool_call_id": "call_1"},
            {
                "kind": "tool_call_settled",
                "turn_id": "t1",
                "tool_call_id": "call_1",
                "status": "failed",
                "content": [
                    {
                        "text": (
                            "outcome unknown: the turn stopped because the session store failed while this ran. It"
                            " was not run again; check the current state before repeating it."
                        )
                    }
                ],
                "result": {
                    "tool_call_id": "call_1",
                    "name": "echo",
                    "parts": [
                        {
                            "text": (
                                "outcome unknown: the turn stopped because the session store failed while this ran."
                                " It was not run again; check the current state before repeating it."
                            )
                        }
                    ],
                    "is_error": True,
                },
                "error_code": "outcome_unknown",
            },
            {
                "kind": "tool_call_settled",
                "turn_id": "t1",
                "tool_call_id": "call_2",
                "status": "failed",
                "content": [{"text": "Not run: the turn was stopped before this call started."}],
                "result": {
                    "tool_call_id": "call_2",
                    "name": "echo",
                    "parts": [{"text": "Not run: the turn was stopped before this call started."}],
                    "is_error": True,
                },
                "error_code": "not_run",
            },
            {"kind": "turn_ended", "turn_id": "t1", "stop_reason": "cancelled"},
            {
                "kind": "user_prompted",
                "turn_id": "t2",
                "message_id": "m3",
                "display": [{"text": "again"}],
                "message": {"parts": [{"text": "again"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": "t2",
                "message_id": "m4",
                "message": {"parts": [{"text": "Fine."}]},
                "model_id": "scripted:model",
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "context_window": 32000,
            },
            {
                "kind": "turn_ended",
                "turn_id": "t2",
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 100, "output_tokens": 20},
            },
        ]
    )
    assert provider.requests[1].messages == [
        user("go"),
        assistant(first, second),
        result(first, STORE_FAILED[1], failed=True),
        result(second, NOT_RUN[1], failed=True),
        user("again"),
    ]


class _HostileTool(EchoTool):
    """Answers with a lone surrogate and invisible TAG characters in its text, its card and its raw output."""

    name = "hostile"
    TEXT = "ok \ud800 \U000e0049\U000e0047\U000e004e\U000e004f\U000e0052\U000e0045 done"

    async def run(self, parsed: Any, approval: Any, ctx: Any) -> ToolOutcome[Any]:
        return ToolOutcome(
            parts=[TextPart(text=self.TEXT)],
            content=[TextBlock(text=self.TEXT), DiffBlock(path="/x", old_text=None, new_text=self.TEXT)],
            raw_output={"stdout": self.TEXT, self.TEXT: [self.TEXT]},
        )


async def test_a_tool_result_is_cleaned_where_it_enters_the_log_and_what_was_removed_is_logged(
    tmp_path: Path,
) -> None:
    hostile = call("call_h", "hostile", message="x")
    provider = ScriptedProvider([tool_reply(hostile), text_reply("Done.")])
    loop = await open_loop(tmp_path, provider, tools=[_HostileTool()])
    with structlog.testing.capture_logs() as logs:
        await loop.turn("go")
    clean = "ok \ufffd  done"
    expected = ToolCallSettled(
        turn_id="t1",
        tool_call_id="call_h",
        status="completed",
        content=[TextBlock(text=clean), DiffBlock(path="/x", old_text=None, new_text=clean)],
        raw_output={"stdout": clean, clean: [clean]},
        result=ToolResultMessage(tool_call_id="call_h", name="hostile", parts=[TextPart(text=clean)]),
    )
    stored = await loop.stored()
    assert stored[4] == expected
    assert loop.shown()[4] == expected, "the editor is shown what was stored"
    assert provider.requests[1].messages[-1] == expected.result
    (entry,) = [e for e in logs if e["event"] == "hidden or unencodable characters removed from a tool result"]
    assert entry["session_id"] == "s1"
    assert entry["tool"] == "hostile"
    assert entry["removed"] == {"surrogate": 6, "tag": 36}, "six texts, each with one surrogate and six TAGs"
