"""``CountingRuntime``: the real ``SessionRuntime`` (the session's owner task), counting what is entered through it,
so tests can check the driver is entered once per session."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TypeVar

from hermes_acp.sessions._runtime import SessionRuntime

__all__ = ["CountingRuntime"]

T = TypeVar("T")


class CountingRuntime(SessionRuntime):
    __test__ = False

    def __init__(self, session_id: str = "computer-use-test") -> None:
        super().__init__(session_id)
        self.entered = 0

    async def enter(self, manager: AbstractAsyncContextManager[T]) -> T:
        self.entered += 1
        return await super().enter(manager)
