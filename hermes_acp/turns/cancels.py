"""``CallCancels``: what a client may stop of a session's tool calls one at a time, by id: a whole call (ACP v2's
``tool_call/cancel``) or only the command it runs (``terminal/cancel``; an agent-owned terminal's id is its call's).

A call is cancellable while the turn clears it (its approval, a permission question included) and while it runs:
``tool_calls`` runs each of those steps inside ``scope``, and ``cancel`` cancels that scope. What the step was doing
stops as a cancelled turn would stop it (a command's process is killed), and the call settles failed with the error
code ``cancelled``; the turn goes on with the rest.

A call with an agent-owned terminal is stoppable from the moment its terminal is announced until it settles
(``stoppable``): ``stop`` sets the call's event, which ends the command if it runs and keeps it from starting if it
has not (the call then settles with what the command printed and how it ended, not as cancelled). No ACP here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import anyio

__all__ = ["CallCancels"]


class CallCancels:
    def __init__(self) -> None:
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._stops: dict[str, anyio.Event] = {}

    @contextlib.contextmanager
    def scope(self, tool_call_id: str) -> Iterator[anyio.CancelScope]:
        """A step of ``tool_call_id`` that ``cancel`` may stop (the scope says whether it did)."""
        with anyio.CancelScope() as scope:
            self._scopes[tool_call_id] = scope
            try:
                yield scope
            finally:
                if self._scopes.get(tool_call_id) is scope:
                    del self._scopes[tool_call_id]

    def cancel(self, tool_call_id: str) -> bool:
        """Stop the step of ``tool_call_id`` under way; False when none is."""
        scope = self._scopes.get(tool_call_id)
        if scope is None:
            return False
        scope.cancel()
        return True

    @contextlib.contextmanager
    def stoppable(self, tool_call_id: str) -> Iterator[anyio.Event]:
        """While ``tool_call_id``'s command may still run: the event ``stop`` sets."""
        stop = anyio.Event()
        self._stops[tool_call_id] = stop
        try:
            yield stop
        finally:
            if self._stops.get(tool_call_id) is stop:
                del self._stops[tool_call_id]

    def stop(self, tool_call_id: str) -> bool:
        """Stop the command of ``tool_call_id``; False when it has none that may still run, or was stopped already."""
        stop = self._stops.get(tool_call_id)
        if stop is None or stop.is_set():
            return False
        stop.set()
        return True
