"""The per-session owner task (DESIGN §4.8): it owns every resource with a task group of its own.

MCP connections and the cua-driver enter cancel scopes that must be exited by the task that entered them, while
ACP runs each request in a different task. So a session's resources are entered here, in one long-lived task, on
request from any handler (``enter``), and torn down here, shielded and bounded, when the session closes or the
server exits. The task also runs the session's background jobs (e.g. writing a title with a model) one at a time,
each bounded. It knows nothing about what the resources are.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import structlog
from anyio.abc import TaskStatus
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
        self._job_scope: anyio.CancelScope | None = None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The owner task. Start it with ``await task_group.start(runtime.run)``."""
        try:
            # The scope around the stack (not one opened inside it) becomes shielded and bounded at teardown:
            # resources with task groups must be exited while their own scopes are the current ones.
            with anyio.CancelScope() as teardown:
                async with AsyncExitStack() as stack:
                    try:
                        task_status.started()
                        async with self._receive:
                            async for item in self._receive:
                                if isinstance(item, _Enter):
                                    await self._enter(stack, item)
                                else:
                                    await self._run_job(item)
                    finally:
                        teardown.shield = True
                        teardown.deadline = anyio.current_time() + TEARDOWN_TIMEOUT_S
            if teardown.cancelled_caught:
                _log.warning("session teardown timed out", session_id=self.session_id)
        finally:
            self._closing = True
            self._send.close()
            self._finished.set()

    async def _enter(self, stack: AsyncExitStack, item: _Enter) -> None:
        try:
            item.result = await stack.enter_async_context(item.manager)
        except Exception as exc:
            item.error = exc
        finally:
            item.done.set()

    async def _run_job(self, job: _Job) -> None:
        if self._closing:
            return
        with anyio.move_on_after(JOB_TIMEOUT_S) as scope:
            self._job_scope = scope
            try:
                await job.fn()
            except Exception:
                _log.exception("session job failed", session_id=self.session_id, job=job.name)
            finally:
                self._job_scope = None
        if scope.cancelled_caught and not self._closing:
            _log.warning("session job timed out", session_id=self.session_id, job=job.name)

    async def enter(self, manager: AbstractAsyncContextManager[T]) -> T:
        """Enter ``manager`` in the owner task; it stays open until the session closes."""
        if self._closing:
            raise RuntimeError(f"session {self.session_id} is closing")
        request = _Enter(manager=manager, done=anyio.Event())
        await self._send.send(request)
        await request.done.wait()
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
        """Stop accepting work, let the owner task tear everything down, and wait for it (bounded)."""
        self._closing = True
        self._send.close()
        if self._job_scope is not None:
            self._job_scope.cancel()
        with anyio.move_on_after(TEARDOWN_TIMEOUT_S + 1):
            await self._finished.wait()
