"""``CallCancels``: the tool calls of a session's turns that a client may stop one at a time (ACP v2's
``tool_call/cancel``), by their ids.

A call is cancellable while the turn clears it (its approval, a permission question included) and while it runs:
``tool_calls`` runs each of those steps inside ``scope``, and ``cancel`` cancels that scope. What the step was doing
stops as a cancelled turn would stop it (a command's process is killed), and the call settles failed with the error
code ``cancelled``; the turn goes on with the rest. No ACP here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import anyio

__all__ = ["CallCancels"]


class CallCancels:
    def __init__(self) -> None:
        self._scopes: dict[str, anyio.CancelScope] = {}

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
