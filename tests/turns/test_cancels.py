"""``CallCancels``: a whole call (``tool_call/cancel``) or only its command (``terminal/cancel``), by id, each while
it may still be stopped and once."""

from __future__ import annotations

import anyio
import pytest

from hermes_acp.turns.cancels import CallCancels

pytestmark = pytest.mark.anyio


async def test_a_command_is_stopped_once_while_its_call_may_run_it() -> None:
    cancels = CallCancels()
    assert not cancels.stop("t1"), "unknown"
    with cancels.stoppable("t1") as stop:
        assert not cancels.stop("t2"), "another call's"
        assert not stop.is_set()
        assert cancels.stop("t1")
        assert stop.is_set()
        assert not cancels.stop("t1"), "stopped already"
    assert not cancels.stop("t1"), "its call has settled"


async def test_stopping_a_command_does_not_cancel_its_call_and_cancelling_does_not_stop_it() -> None:
    cancels = CallCancels()
    with cancels.stoppable("t1") as stop, cancels.scope("t1") as step:
        assert cancels.stop("t1")
        await anyio.lowlevel.checkpoint()
        assert not step.cancel_called, "the call goes on: it settles with what the command printed"
    with cancels.stoppable("t2") as stop, cancels.scope("t2") as step:
        assert cancels.cancel("t2")
        await anyio.lowlevel.checkpoint()
    assert step.cancelled_caught and not stop.is_set()
