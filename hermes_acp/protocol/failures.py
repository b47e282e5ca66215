"""How a prompt that failed is described to a client: one JSON-RPC error object, whatever the version shows it in.

A prompt fails with an error it raised (a provider that refused the key, the store) or with the failure its model
request ended the turn on (``PromptResult.failure``: the provider's words, shown to the user as a notice too).
``failure_error`` makes both the error object ACP's boundary would answer with (``jsonrpc.boundary.to_wire`` with
``errors.acp_error``: the code, the message, and ``data`` saying what failed). v2 puts it in the idle
``state_update`` of a prompt that failed after it was inserted (``stopReason: "error"``); a v1 prompt answered with
an error carries the same object. No I/O.
"""

from __future__ import annotations

from typing import Any

from hermes_acp.jsonrpc.boundary import error, to_wire

from .errors import acp_error

__all__ = ["MODEL_REQUEST_FAILED", "failure_error"]

MODEL_REQUEST_FAILED = "model_request_failed"
"""``data.reason`` of a turn that ended on its model request's failure."""


def failure_error(failure: BaseException | str, method: str = "session/prompt") -> dict[str, Any]:
    """The JSON-RPC error object of a prompt's ``failure`` (see the module docstring)."""
    if isinstance(failure, str):
        return error(-32603, failure, {"reason": MODEL_REQUEST_FAILED})
    return to_wire(failure, method, acp_error)
