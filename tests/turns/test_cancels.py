"""``CallCancels``: a whole call (``tool_call/cancel``) or only its command (``terminal/cancel``), by id, from its
announcement until it settles: the step under way, or the next one of a call still queued; a command stopped while
it may run, and never after; and, through the turn loop, let go before the call's settlement goes out, whether it
settles by itself or with a turn that ends under it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio
import pytest

from hermes_acp.core import DisplayBlock, SessionEvent, TextBlock, ToolCallSettled
from hermes_acp.providers.scripted import ScriptedProvider, text_reply, tool_reply
from hermes_acp.turns.cancels import CallCancels
from hermes_acp.turns.loop import run_turn
from hermes_acp.turns.ports import CancelTarget
from hermes_acp.turns.state import TurnState
from tests.fakes.tools import EchoTool, GuardedWriteTool, call
from tests.turns.support import Gate, Sink, open_loop

pytestmark = pytest.mark.anyio


async def test_a_command_is_stopped_from_its_call_s_announcement_until_it_settles() -> None:
    cancels = CallCancels()
    assert not cancels.stop("t1"), "unknown"
    stop = cancels.expect("t1", terminal=True)
    assert stop is not None and cancels.expect("r1", terminal=False) is None
    assert not cancels.stop("r1"), "a call without an agent-owned terminal has no command to stop"
    assert cancels.stop("t1") and stop.requested.is_set(), "queued: it will not start"
    assert cancels.stop("t1"), "the same answer again"
    cancels.release("t1")
    assert not cancels.stop("t1"), "settled"


async def test_a_closed_stop_is_refused_and_release_all_lets_every_call_go() -> None:
    cancels = CallCancels()
    stop = cancels.expect("t1", terminal=True)
    assert stop is not None
    stop.close()  # the command ended
    assert not cancels.stop("t1") and not stop.requested.is_set()
    other = cancels.expect("t2", terminal=True)
    cancels.expect("r1", terminal=False)
    cancels.release_all()
    assert not cancels.stop("t2") and not cancels.cancel("r1")
    assert other is not None and not other.request(), "a released call's stop is closed"


async def test_a_queued_call_is_cancelled_as_its_first_step_starts() -> None:
    cancels = CallCancels()
    assert not cancels.cancel("c1"), "unknown"
    cancels.expect("c1", terminal=False)
    assert cancels.cancel("c1")
    with cancels.scope("c1") as step:
        await anyio.lowlevel.checkpoint()
    assert step.cancelled_caught


async def test_stopping_a_command_does_not_cancel_its_call_and_cancelling_does_not_stop_it() -> None:
    cancels = CallCancels()
    stop = cancels.expect("t1", terminal=True)
    with cancels.scope("t1") as step:
        assert cancels.stop("t1")
        await anyio.lowlevel.checkpoint()
    assert not step.cancelled_caught, "the call goes on: it settles with what the command printed"
    other = cancels.expect("t2", terminal=True)
    with cancels.scope("t2") as step:
        assert cancels.cancel("t2")
        await anyio.lowlevel.checkpoint()
    assert step.cancelled_caught and stop is not None and other is not None and not other.requested.is_set()


async def test_what_of_a_call_may_be_stopped_now_follows_its_announcement_its_command_and_its_settlement() -> None:
    cancels = CallCancels()
    assert cancels.open_to("t1") == (), "never announced"
    stop = cancels.expect("t1", terminal=True)
    cancels.expect("r1", terminal=False)
    assert cancels.open_to("t1") == ("terminal", "tool_call") and cancels.open_to("r1") == ("tool_call",)
    assert stop is not None and cancels.stop("t1")
    assert cancels.open_to("t1") == ("terminal", "tool_call"), "stopping again gets the same answer"
    stop.close()  # the command ended; the call has not settled yet
    assert cancels.open_to("t1") == ("tool_call",)
    cancels.release("t1")
    cancels.release("r1")
    assert cancels.open_to("t1") == () and cancels.open_to("r1") == ()


@dataclass
class _SettlementWatch(Sink):
    """A sink that notes, as each settlement goes out, what of that call a client would still be offered."""

    cancels: CallCancels = field(default_factory=CallCancels)
    offered: list[tuple[str, tuple[CancelTarget, ...]]] = field(default_factory=list)

    async def emit_event(self, event: SessionEvent, *, live: bool, seq: int | None = None) -> None:
        if isinstance(event, ToolCallSettled):
            self.offered.append((event.tool_call_id, self.cancels.open_to(event.tool_call_id)))
        await super().emit_event(event, live=live, seq=seq)


async def test_a_call_lets_go_of_its_cancels_before_its_settlement_goes_out(tmp_path: Path) -> None:
    provider = ScriptedProvider([tool_reply(call("e1", "echo", message="hi")), text_reply("done")])
    loop = await open_loop(tmp_path, provider, tools=[EchoTool()])
    watch = _SettlementWatch()
    loop.recorder.sink = watch
    with anyio.fail_after(10):
        await run_turn(TurnState(turn_id="t1"), replace(loop.deps, cancels=watch.cancels), [TextBlock(text="go")])
    assert watch.offered == [("e1", ())]


async def test_a_turn_cancelled_under_a_call_lets_go_of_it_before_settling_it(tmp_path: Path) -> None:
    hold = anyio.Event()
    gate = Gate(hold=hold)
    provider = ScriptedProvider([tool_reply(call("w1", "guarded_write", message="x"))])
    loop = await open_loop(tmp_path, provider, tools=[GuardedWriteTool()], gate=gate)
    watch = _SettlementWatch()
    loop.recorder.sink = watch
    deps = replace(loop.deps, cancels=watch.cancels)
    display: list[DisplayBlock] = [TextBlock(text="write it")]
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(run_turn, TurnState(turn_id="t1"), deps, display)
            await gate.was_asked.wait()
            assert watch.cancels.open_to("w1") == ("tool_call",), "offered while its question is open"
            group.cancel_scope.cancel()
    hold.set()
    assert watch.offered == [("w1", ())], "the cancelled turn's settlement of the call offers nothing"
