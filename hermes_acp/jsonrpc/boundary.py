"""Exceptions as JSON-RPC errors: the dispatcher's single exception → wire boundary.

Every error — a client's error answer we pass on, invalid params, a server's own error, or an unexpected bug —
becomes a JSON-RPC error object with a message that says what was wrong: ``ClientRequestError`` as it is, -32602
naming the field (``InvalidParamsError``: invalid params arrive here already translated, ``wire.parse``), what the
server's ``ErrorMap`` makes of an exception it knows (protocol/errors.py maps ours to ACP's codes), -32603 for the
rest (logged). Nothing answers ``null`` instead of an error. Deliberately not ACP-aware: no ACP code is known here;
no pydantic either, so it loads in no time.

``ClientRequestError`` is also the error a request *we* sent raises when the client answers with an error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from hermes_acp.errors import InvalidParamsError

__all__ = ["CANCELLED", "ClientRequestError", "ErrorMap", "error", "to_wire"]

CANCELLED: dict[str, Any] = {"code": -32800, "message": "Request cancelled"}
_log = logging.getLogger("hermes_acp.protocol")

ErrorMap = Callable[[BaseException], dict[str, Any] | None]
"""A server's own exceptions as JSON-RPC error objects (``error``): the one for an exception it knows, None for
one it does not (the boundary answers that one -32603 and logs it)."""


class ClientRequestError(Exception):
    """A JSON-RPC error: one a handler raises as is, or the client's answer to a request we sent."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    @classmethod
    def from_error(cls, error: dict[str, Any]) -> ClientRequestError:
        code = error.get("code")
        return cls(
            code if isinstance(code, int) and not isinstance(code, bool) else -32603,
            str(error.get("message") or "no message"),
            error.get("data"),
        )

    def describe(self) -> str:
        detail = f": {self.data}" if self.data not in (None, "", {}) else ""
        return f"{self.message}{detail} (error {self.code})"


def to_wire(exc: BaseException, method: str, known: ErrorMap | None = None) -> dict[str, Any]:
    """The JSON-RPC error object a client should see for ``exc`` raised while handling ``method``; ``known`` maps
    the server's own exceptions."""
    match exc:
        case ClientRequestError():
            return error(exc.code, exc.message, exc.data)
        case InvalidParamsError():
            data: dict[str, Any] = {**exc.data}
            if exc.field:
                data["field"] = exc.field
            return error(-32602, f"Invalid params: {exc}", data or None)
    mapped = known(exc) if known is not None else None
    if mapped is not None:
        return mapped
    _log.error("unexpected error while handling %s", method, exc_info=exc)
    return error(-32603, f"Internal error while handling {method}: {type(exc).__name__}: {exc}")


def error(code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error object (``data`` only when there is some)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return error
