"""How a prompt that failed is described to a client: one JSON-RPC error object, whatever the version shows it in.

A prompt fails with an error it raised (a provider that refused the key, the store) or with the failure its model
request ended the turn on (``PromptResult.failure``, an ``errors.TurnFailure``: the provider's words, shown to the
user as a notice too). ``failure_error`` makes the error object ACP's boundary answers with for either
(``jsonrpc.boundary.to_wire`` with ``errors.acp_error``: the code, the message, and ``data`` saying what failed; a
``TurnFailure`` goes through ``TurnFailedError``, as a v1 ``session/prompt`` raises it). v2 puts it in the idle
``state_update`` of a prompt that failed after it was inserted (``stopReason: "error"``); a v1 prompt answered with
an error carries the same object. No I/O.
"""

from __future__ import annotations

from typing import Any

from hermes_acp.errors import TurnFailedError, TurnFailure
from hermes_acp.jsonrpc.boundary import to_wire

from .errors import acp_error

__all__ = ["failure_error"]


def failure_error(failure: BaseException | TurnFailure, method: str = "session/prompt") -> dict[str, Any]:
    """The JSON-RPC error object of a prompt's ``failure`` (see the module docstring)."""
    if isinstance(failure, TurnFailure):
        failure = TurnFailedError(failure)
    return to_wire(failure, method, acp_error)
