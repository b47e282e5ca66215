"""``CallCancels``: what a client may stop of a session's tool calls one at a time, by id: a whole call (ACP v2's
``tool_call/cancel``) or only the command it runs (``terminal/cancel``; an agent-owned terminal's id is its call's).

Every call is registered when it is announced (``expect``: from then on a client sees it and may stop it) and let
go as it settles, before its settlement goes out (``release``; what an ending turn leaves, before the loop settles
it: ``release_all``), so a client told a call settled is never offered its cancel (``open_to``). A call is cancelled
in the step under way (its approval, a permission question included, or its run): ``tool_calls`` runs each step
inside ``scope``, and ``cancel`` cancels that scope, so what the step was doing stops as a cancelled turn would stop
it (a command's process is killed); a call still queued behind others is cancelled as its first step starts. It
settles failed with the error code ``cancelled``; the turn goes on with the rest.

A call announced with an agent-owned terminal has a ``CommandStop``: ``stop`` requests it, which ends the command
if it runs and keeps it from starting if it has not (the call is not cancelled: it settles with what the command
printed and how it ended), until the tool closes it once the command has ended. ``open_to`` says what of a call a
client may stop now, for a connection that was shown the call only as a replay. No ACP here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import anyio

from hermes_acp.tools.context import CommandStop

from .ports import CancelTarget

__all__ = ["CallCancels"]


@dataclass(slots=True)
class _Announced:
    stop: CommandStop | None
    cancelled: bool = False
    """``cancel`` came while no step of the call was under way: its next step is cancelled as it starts."""


class CallCancels:
    def __init__(self) -> None:
        self._calls: dict[str, _Announced] = {}
        self._steps: dict[str, anyio.CancelScope] = {}

    def expect(self, tool_call_id: str, *, terminal: bool) -> CommandStop | None:
        """Register an announced call (before its announcement goes out); its command's stop when it has an
        agent-owned ``terminal``."""
        stop = CommandStop() if terminal else None
        self._calls[tool_call_id] = _Announced(stop)
        return stop

    def release(self, tool_call_id: str) -> None:
        """The call has settled: nothing of it can be stopped any more."""
        announced = self._calls.pop(tool_call_id, None)
        if announced is not None and announced.stop is not None:
            announced.stop.close()

    def release_all(self) -> None:
        """The turn has ended: every call it announced is let go."""
        for tool_call_id in list(self._calls):
            self.release(tool_call_id)

    @contextlib.contextmanager
    def scope(self, tool_call_id: str) -> Iterator[anyio.CancelScope]:
        """A step of ``tool_call_id`` that ``cancel`` may stop (the scope says whether it did)."""
        with anyio.CancelScope() as scope:
            announced = self._calls.get(tool_call_id)
            if announced is not None and announced.cancelled:
                scope.cancel()
            self._steps[tool_call_id] = scope
            try:
                yield scope
            finally:
                if self._steps.get(tool_call_id) is scope:
                    del self._steps[tool_call_id]

    def cancel(self, tool_call_id: str) -> bool:
        """Stop the call: the step under way, else its next one; False when no call of that id may be stopped."""
        scope = self._steps.get(tool_call_id)
        if scope is not None:
            scope.cancel()
            return True
        announced = self._calls.get(tool_call_id)
        if announced is None:
            return False
        announced.cancelled = True
        return True

    def open_to(self, tool_call_id: str) -> tuple[CancelTarget, ...]:
        """What a client may stop of ``tool_call_id`` now: the call until it settles, and its command while a stop
        would still be taken; nothing once it has settled (or was never announced)."""
        announced = self._calls.get(tool_call_id)
        if announced is None:
            return ()
        if announced.stop is not None and announced.stop.is_open:
            return ("terminal", "tool_call")
        return ("tool_call",)

    def stop(self, tool_call_id: str) -> bool:
        """Stop the command of ``tool_call_id`` (again: the same answer); False when it has no agent-owned terminal
        or its command can no longer be stopped."""
        announced = self._calls.get(tool_call_id)
        return announced is not None and announced.stop is not None and announced.stop.request()
