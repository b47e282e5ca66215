"""The session's owner task: callers never wait forever, nothing entered is left without an owner, and background
jobs never hold up an entry (docs/architecture.md §4.8)."""

from __future__ import annotations

from types import TracebackType

import anyio
import pytest

from hermes_acp.sessions._runtime import SessionRuntime

pytestmark = pytest.mark.anyio


class Resource:
    """A resource entered through the owner task; its entry waits for ``release`` when ``blocking``."""

    def __init__(self, *, blocking: bool = False) -> None:
        self.entering = anyio.Event()
        self.release = anyio.Event()
        self.exited = anyio.Event()
        if not blocking:
            self.release.set()

    async def __aenter__(self) -> Resource:
        self.entering.set()
        await self.release.wait()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.exited.set()


async def test_callers_still_waiting_when_the_owner_task_ends_get_an_error_naming_the_session() -> None:
    runtime = SessionRuntime("s-ends")
    entering, queued = Resource(blocking=True), Resource()
    errors: list[str] = []

    async def enter(resource: Resource) -> None:
        try:
            await runtime.enter(resource)
        except RuntimeError as exc:
            errors.append(str(exc))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as callers:
            async with anyio.create_task_group() as owner:
                await owner.start(runtime.run)
                callers.start_soon(enter, entering)
                await entering.entering.wait()
                callers.start_soon(enter, queued)
                await anyio.wait_all_tasks_blocked()
                owner.cancel_scope.cancel()
    assert errors == ["session s-ends is closing"] * 2
    assert not queued.entering.is_set()


async def test_an_entry_whose_caller_gave_up_is_left_again_at_once() -> None:
    runtime = SessionRuntime("s-gave-up")
    resource = Resource(blocking=True)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            await group.start(runtime.run)
            async with anyio.create_task_group() as caller:
                caller.start_soon(runtime.enter, resource)
                await resource.entering.wait()
                caller.cancel_scope.cancel()
            resource.release.set()
            await resource.exited.wait()
            await runtime.aclose()


async def test_an_entry_whose_caller_gave_up_before_its_turn_is_skipped() -> None:
    runtime = SessionRuntime("s-skipped")
    busy, skipped = Resource(blocking=True), Resource()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            await group.start(runtime.run)
            group.start_soon(runtime.enter, busy)
            await busy.entering.wait()
            async with anyio.create_task_group() as caller:
                caller.start_soon(runtime.enter, skipped)
                await anyio.wait_all_tasks_blocked()
                caller.cancel_scope.cancel()
            busy.release.set()
            await runtime.enter(Resource())  # served after the abandoned one: the owner has passed it
            await runtime.aclose()
    assert not skipped.entering.is_set()
    assert busy.exited.is_set()


async def test_an_entry_does_not_wait_behind_a_background_job() -> None:
    runtime = SessionRuntime("s-jobs")
    job_started = anyio.Event()
    job_cancelled: list[bool] = []

    async def stuck_job() -> None:
        job_started.set()
        try:
            await anyio.Event().wait()
        except anyio.get_cancelled_exc_class():
            job_cancelled.append(True)
            raise

    resource = Resource()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            await group.start(runtime.run)
            runtime.submit(stuck_job, "stuck")
            await job_started.wait()
            assert await runtime.enter(resource) is resource
            await runtime.aclose()
    assert job_cancelled == [True]
    assert resource.exited.is_set()
