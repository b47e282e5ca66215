"""The re-armed events (``core/flags.py``): a flag set many times wakes its waiter once per pass; a change wakes
every task waiting at that moment and none that comes later."""

from __future__ import annotations

import anyio
import pytest

from hermes_acp.core.flags import Changed, Flag

pytestmark = pytest.mark.anyio


async def test_a_flag_set_many_times_wakes_its_waiter_once_and_is_armed_again() -> None:
    flag = Flag()
    woken: list[int] = []

    async def consumer() -> None:
        while True:
            await flag.wait()
            woken.append(len(woken))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(consumer)
            await anyio.wait_all_tasks_blocked()
            assert woken == [] and not flag.is_set()
            flag.set()
            flag.set()
            assert flag.is_set()
            await anyio.wait_all_tasks_blocked()
            assert woken == [0] and not flag.is_set(), "two sets before the waiter ran: one wake-up"
            flag.set()
            await anyio.wait_all_tasks_blocked()
            assert woken == [0, 1]
            group.cancel_scope.cancel()


async def test_a_flag_made_pending_returns_at_once() -> None:
    flag = Flag(pending=True)
    with anyio.fail_after(5):
        await flag.wait()
    assert not flag.is_set()


async def test_a_change_wakes_every_waiter_of_the_moment_and_not_a_later_one() -> None:
    changed = Changed()
    woken: list[str] = []

    async def waiter(name: str) -> None:
        await changed.wait()
        woken.append(name)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(waiter, "a")
            group.start_soon(waiter, "b")
            await anyio.wait_all_tasks_blocked()
            changed.notify()
            await anyio.wait_all_tasks_blocked()
            assert sorted(woken) == ["a", "b"]
            group.start_soon(waiter, "late")
            await anyio.wait_all_tasks_blocked()
            assert "late" not in woken, "a notify before it began is not seen"
            changed.notify()
    assert woken[-1] == "late"
