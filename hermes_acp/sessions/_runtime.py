"""The per-session owner task (docs/architecture.md §4.8): it owns every resource with a task group of its own.

MCP connections and the cua-driver enter cancel scopes that must be exited by the task that entered them, while
ACP runs each request in a different task. So a session's resources are entered here, in one long-lived task, on
request from any handler (``enter``), and torn down here, shielded and bounded, when the session closes or the
server exits. A caller that gives up waiting leaves nothing behind (its entry is skipped, or left again at once),
and a caller still waiting when the task ends gets an error. The task also runs the session's background jobs
(e.g. writing a title with a model) in a task group of its own, each bounded, so an entry never waits behind a job.
It knows nothing about what the resources are.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["JOB_TIMEOUT_S", "TEARDOWN_TIMEOUT_S", "SessionRuntime"]

T = TypeVar("T")
TEARDOWN_TIMEOUT_S = 5.0
JOB_TIMEOUT_S = 60.0
_log = structlog.get_logger("hermes_acp.sessions")


@dataclass
class _Enter:
    manager: AbstractAsyncContextManager[Any]
    done: anyio.Event
    result: Any = None
    error: BaseException | None = None
    abandoned: bool = False
    """Set by a caller that stopped waiting: nobody will hold what would be entered."""


@dataclass
class _Job:
    fn: Callable[[], Awaitable[None]]
    name: str


class SessionRuntime:
    def __init__(self, session_id: str):
        self.session_id = session_id
        send, receive = anyio.create_memory_object_stream[_Enter | _Job](64)
        self._send: MemoryObjectSendStream[_Enter | _Job] = send
        self._receive: MemoryObjectReceiveStream[_Enter | _Job] = receive
        self._finished = anyio.Event()
        self._closing = False

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The owner task. Start it with ``await task_group.start(runtime.run)``."""
        try:
            async with anyio.create_task_group() as jobs:
                # The scope around the stack (not one opened inside it) becomes shielded and bounded at teardown:
                # resources with task groups must be exited while their own scopes are the current ones.
                with anyio.CancelScope() as teardown:
                    async with AsyncExitStack() as stack:
                        try:
                            task_status.started()
                            await self._serve(stack, jobs)
                        finally:
                            jobs.cancel_scope.cancel()
                            teardown.shield = True
                            teardown.deadline = anyio.current_time() + TEARDOWN_TIMEOUT_S
                if teardown.cancelled_caught:
                    _log.warning("session teardown timed out", session_id=self.session_id)
        finally:
            self._closing = True
            self._send.close()
            self._refuse_pending()
            self._receive.close()
            self._finished.set()

    async def _serve(self, stack: AsyncExitStack, jobs: TaskGroup) -> None:
        async for item in self._receive:
            if self._closing:
                self._refuse(item)
                return
            if isinstance(item, _Enter):
                if not item.abandoned:  # its caller stopped waiting before its turn: enter nothing
                    await self._enter(stack, item)
            else:
                jobs.start_soon(self._run_job, item, name=f"session job {item.name}")

    async def _enter(self, stack: AsyncExitStack, item: _Enter) -> None:
        try:
            async with AsyncExitStack() as attempt:
                item.result = await attempt.enter_async_context(item.manager)
                if item.abandoned:
                    _log.info("an entry's caller stopped waiting; leaving it again", session_id=self.session_id)
                else:
                    stack.push_async_exit(attempt.pop_all())
        except Exception as exc:
            item.error = exc
        except anyio.get_cancelled_exc_class():
            item.error = self._closing_error()
            raise
        finally:
            item.done.set()

    def _refuse(self, item: _Enter | _Job) -> None:
        if isinstance(item, _Enter):
            item.error = self._closing_error()
            item.done.set()

    def _refuse_pending(self) -> None:
        while True:
            try:
                item = self._receive.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                return
            self._refuse(item)

    def _closing_error(self) -> RuntimeError:
        return RuntimeError(f"session {self.session_id} is closing")

    async def _run_job(self, job: _Job) -> None:
        with anyio.move_on_after(JOB_TIMEOUT_S) as scope:
            try:
                await job.fn()
            except Exception:
                _log.exception("session job failed", session_id=self.session_id, job=job.name)
        if scope.cancelled_caught:
            _log.warning("session job timed out", session_id=self.session_id, job=job.name)

    async def enter(self, manager: AbstractAsyncContextManager[T]) -> T:
        """Enter ``manager`` in the owner task; it stays open until the session closes.

        Raises ``RuntimeError`` when the session closes first. A caller that stops waiting (cancelled, timed out)
        leaves nothing entered."""
        if self._closing:
            raise self._closing_error()
        request = _Enter(manager=manager, done=anyio.Event())
        try:
            await self._send.send(request)
            await request.done.wait()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise self._closing_error() from None
        except anyio.get_cancelled_exc_class():
            request.abandoned = True
            raise
        if request.error is not None:
            raise request.error
        return request.result  # type: ignore[no-any-return]

    def submit(self, fn: Callable[[], Awaitable[None]], name: str) -> None:
        """Queue a background job; dropped (and logged) when the session is closing or the queue is full."""
        if self._closing:
            return
        try:
            self._send.send_nowait(_Job(fn=fn, name=name))
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            _log.warning("session job dropped", session_id=self.session_id, job=name)

    async def aclose(self) -> None:
        """Stop accepting work, let the owner task cancel its jobs and tear everything down; wait for it (bounded)."""
        self._closing = True
        self._send.close()
        with anyio.move_on_after(TEARDOWN_TIMEOUT_S + 1):
            await self._finished.wait()
