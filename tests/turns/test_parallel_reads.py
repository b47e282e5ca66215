"""Tool calls that only read, run together: each stores its own events and settles on its own, the model reads the
results in the order it asked for them, anything else runs alone in order, permission questions come one at a time,
and a stop settles them all. Each scenario is checked whole: every stored event and the model's history.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from hermes_acp.core import PermissionResolved, SessionEvent, TextPart, ToolCallRunning, ToolCallSettled, Usage
from hermes_acp.errors import StorageError
from hermes_acp.providers.scripted import ScriptedProvider, text_reply, tool_reply
from hermes_acp.turns import PermissionAnswer, PermissionQuestion, SessionProjection
from hermes_acp.turns.settlements import CANCELLED, NOT_RUN, STORE_FAILED
from hermes_acp.turns.tool_calls import MAX_PARALLEL_READS
from tests.fakes.tools import GatedReadTool, GuardedWriteTool, call

from .support import USAGE, Gate, Loop, open_loop
from .test_loop import answered, assistant, cancel_when, ended, prompted, result, settled, started, user

pytestmark = pytest.mark.anyio


def running(call_id: str) -> ToolCallRunning:
    return ToolCallRunning(turn_id="t1", tool_call_id=call_id)


def text(value: str) -> TextPart:
    return TextPart(text=value)


def settled_count(loop: Loop) -> int:
    return sum(isinstance(event, ToolCallSettled) for _, event in loop.sink.events)


async def release_in_turn(loop: Loop, reader: GatedReadTool, *messages: str) -> None:
    """Release calls one by one, each once the one before has settled, so the settlements come in a known order."""
    for message in messages:
        await _release_one(loop, reader, message)


async def _release_one(loop: Loop, reader: GatedReadTool, message: str) -> None:
    wanted = settled_count(loop) + 1
    reader.release(message)
    await loop.sink.wait_for(lambda: settled_count(loop) >= wanted)


def reloaded(events: Sequence[SessionEvent]) -> SessionProjection:
    projection = SessionProjection()
    for event in events:
        projection.apply(event)
    return projection


async def test_reads_run_together_settle_as_they_finish_and_reach_the_model_in_the_order_asked(
    tmp_path: Path,
) -> None:
    a, b, c = (call(f"r_{m}", "gated_read", message=m) for m in "abc")
    provider = ScriptedProvider([tool_reply(a, b, c, text="Reading."), text_reply("Read all three.")])
    reader = GatedReadTool()
    loop = await open_loop(tmp_path, provider, tools=[reader])
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(loop.turn, "read three")
            await reader.wait_started("a", "b", "c")  # all three run at once
            await release_in_turn(loop, reader, "c", "a", "b")
    stored = await loop.stored()
    assert stored == [
        prompted("t1", "m1", "read three"),
        answered("t1", "m2", text("Reading."), a, b, c),
        started("t1", a, "Read a", "read"),
        started("t1", b, "Read b", "read"),
        started("t1", c, "Read c", "read"),
        running("r_a"),
        running("r_b"),
        running("r_c"),
        settled("t1", c, "read: c"),
        settled("t1", a, "read: a"),
        settled("t1", b, "read: b"),
        answered("t1", "m3", text("Read all three.")),
        ended("t1", usage=USAGE + USAGE),
    ]
    asked = [user("read three"), assistant(text("Reading."), a, b, c), result(a, "read: a"), result(b, "read: b")]
    asked.append(result(c, "read: c"))
    assert provider.requests[1].messages == asked, "the model reads the results in the order it asked for them"
    assert loop.shown() == stored, "live shows the events in the order a replay will"
    assert loop.recorder.projection.history == [*asked, assistant(text("Read all three."))]
    replayed = reloaded([s.event for s in await loop.store.load_events("s1")])
    assert replayed.history == loop.recorder.projection.history, "a reload builds the same history"


async def test_a_write_between_reads_runs_alone_after_them_and_before_the_next(tmp_path: Path) -> None:
    a, b = call("r_a", "gated_read", message="a"), call("r_b", "gated_read", message="b")
    write = call("w1", "guarded_write", message="notes")
    c = call("r_c", "gated_read", message="c")
    provider = ScriptedProvider([tool_reply(a, b, write, c), text_reply("Done.")])
    reader, writer = GatedReadTool(), GuardedWriteTool()
    gate = Gate(answers=["allow_once"])
    loop = await open_loop(tmp_path, provider, tools=[reader, writer], gate=gate)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(loop.turn, "read, write, read")
            await reader.wait_started("a", "b")
            assert (gate.asked, writer.writes) == ([], []), "the write waits for the reads before it"
            await release_in_turn(loop, reader, "b", "a")
            await reader.wait_started("c")
            assert writer.writes == ["notes"], "the write ran before the read after it started"
            reader.release("c")
    assert await loop.stored() == [
        prompted("t1", "m1", "read, write, read"),
        answered("t1", "m2", a, b, write, c),
        started("t1", a, "Read a", "read"),
        started("t1", b, "Read b", "read"),
        started("t1", write, "Write notes.txt", "edit"),
        started("t1", c, "Read c", "read"),
        running("r_a"),
        running("r_b"),
        settled("t1", b, "read: b"),
        settled("t1", a, "read: a"),
        PermissionResolved(turn_id="t1", tool_call_id="w1", outcome="allow_once", scope="edit"),
        running("w1"),
        settled("t1", write, "written"),
        running("r_c"),
        settled("t1", c, "read: c"),
        answered("t1", "m3", text("Done.")),
        ended("t1", usage=USAGE + USAGE),
    ]
    assert provider.requests[1].messages == [
        user("read, write, read"),
        assistant(a, b, write, c),
        result(a, "read: a"),
        result(b, "read: b"),
        result(write, "written"),
        result(c, "read: c"),
    ]


class _CountingGate(Gate):
    """Holds every question until ``hold`` is set, and records how many were open at once."""

    def __init__(self, answers: list[PermissionAnswer], hold: anyio.Event) -> None:
        super().__init__(answers=answers, hold=hold)
        self.open = 0
        self.most_open = 0

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            return await super().ask(question)
        finally:
            self.open -= 1


async def test_reads_that_ask_are_asked_one_at_a_time_in_call_order_while_earlier_reads_run(tmp_path: Path) -> None:
    a, ask_b, ask_c = (call(f"r_{m}", "gated_read", message=m) for m in ("a", "ask_b", "ask_c"))
    provider = ScriptedProvider([tool_reply(a, ask_b, ask_c), text_reply("Done.")])
    reader = GatedReadTool()
    hold = anyio.Event()
    gate = _CountingGate(["allow_once", "reject_once"], hold)
    loop = await open_loop(tmp_path, provider, tools=[reader], gate=gate)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(loop.turn, "read three")
            await reader.wait_started("a")
            await gate.was_asked.wait()
            await anyio.wait_all_tasks_blocked()
            assert [q.tool_call_id for q in gate.asked] == ["r_ask_b"], "one question at a time"
            hold.set()
            await reader.wait_started("ask_b")
            await release_in_turn(loop, reader, "ask_b", "a")
    assert [q.tool_call_id for q in gate.asked] == ["r_ask_b", "r_ask_c"]
    assert gate.most_open == 1
    refused = "Error (permission_denied): the user refused this call; it was not run"
    assert await loop.stored() == [
        prompted("t1", "m1", "read three"),
        answered("t1", "m2", a, ask_b, ask_c),
        started("t1", a, "Read a", "read"),
        started("t1", ask_b, "Read ask_b", "read"),
        started("t1", ask_c, "Read ask_c", "read"),
        running("r_a"),
        PermissionResolved(turn_id="t1", tool_call_id="r_ask_b", outcome="allow_once", scope="gated_read"),
        running("r_ask_b"),
        PermissionResolved(turn_id="t1", tool_call_id="r_ask_c", outcome="reject_once", scope="gated_read"),
        settled("t1", ask_c, refused, failed=True, error_code="permission_denied"),
        settled("t1", ask_b, "read: ask_b"),
        settled("t1", a, "read: a"),
        answered("t1", "m3", text("Done.")),
        ended("t1", usage=USAGE + USAGE),
    ]
    assert provider.requests[1].messages == [
        user("read three"),
        assistant(a, ask_b, ask_c),
        result(a, "read: a"),
        result(ask_b, "read: ask_b"),
        result(ask_c, refused, failed=True),
    ]


async def test_cancel_during_reads_cancels_the_running_ones_and_the_rest_are_not_run(tmp_path: Path) -> None:
    messages = [f"m{i}" for i in range(MAX_PARALLEL_READS + 1)]
    calls = [call(f"r_{m}", "gated_read", message=m) for m in messages]
    reader = GatedReadTool()
    loop = await open_loop(tmp_path, ScriptedProvider([tool_reply(*calls)]), tools=[reader])
    await cancel_when(loop, "read five", lambda: len(reader.started) == MAX_PARALLEL_READS)
    running_ones, waiting = calls[:MAX_PARALLEL_READS], calls[MAX_PARALLEL_READS]
    assert reader.started == messages[:MAX_PARALLEL_READS], f"at most {MAX_PARALLEL_READS} at once"
    assert sorted(reader.cancelled) == sorted(reader.started)
    assert await loop.stored() == [
        prompted("t1", "m1", "read five"),
        answered("t1", "m2", *calls),
        *[started("t1", c, f"Read {m}", "read") for c, m in zip(calls, messages, strict=True)],
        *[running(c.id) for c in running_ones],
        *[settled("t1", c, CANCELLED[1], failed=True, error_code="cancelled") for c in running_ones],
        settled("t1", waiting, NOT_RUN[1], failed=True, error_code="not_run"),
        ended("t1", "cancelled"),
    ]
    assert loop.recorder.projection.history == [
        user("read five"),
        assistant(*calls),
        *[result(c, CANCELLED[1], failed=True) for c in running_ones],
        result(waiting, NOT_RUN[1], failed=True),
    ]


async def test_a_result_that_cannot_be_stored_stops_the_other_reads_and_all_are_outcome_unknown(
    tmp_path: Path,
) -> None:
    a, b = call("r_a", "gated_read", message="a"), call("r_b", "gated_read", message="b")
    provider = ScriptedProvider([tool_reply(a, b), text_reply("Fine.")])
    reader = GatedReadTool()
    loop = await open_loop(tmp_path, provider, tools=[reader])
    loop.store.refuse_once(lambda events: any(isinstance(e, ToolCallSettled) for e in events))
    raised: list[BaseException] = []

    async def turn() -> None:
        try:
            await loop.turn("read two")
        except StorageError as exc:
            raised.append(exc)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(turn)
            await reader.wait_started("a", "b")
            reader.release("b")
    assert [type(exc) for exc in raised] == [StorageError], "the store's error, as itself"
    assert reader.cancelled == ["a"], "the other read was stopped"
    unknown = [settled("t1", x, STORE_FAILED[1], failed=True, error_code="outcome_unknown") for x in (a, b)]
    assert loop.shown()[-2:] == unknown, "the live cards"
    await loop.turn("again")
    assert await loop.stored() == [
        prompted("t1", "m1", "read two"),
        answered("t1", "m2", a, b),
        started("t1", a, "Read a", "read"),
        started("t1", b, "Read b", "read"),
        running("r_a"),
        running("r_b"),
        *unknown,
        ended("t1", "cancelled", Usage()),
        prompted("t2", "m3", "again"),
        answered("t2", "m4", text("Fine.")),
        ended("t2"),
    ]
