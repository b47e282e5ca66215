"""Our exceptions as JSON-RPC errors: the mapping the dispatcher's single exception → wire boundary applies.

Every error — ours (``HermesError``), a client's error answer we pass on, or an unexpected bug — becomes the right
JSON-RPC error object with a message that says what was wrong: -32602 naming the field, the ACP resource-not-found
(-32002) naming the session, auth_required (-32000) saying what to configure, -32603 for the rest. Nothing answers
``null`` instead of an error. Invalid params arrive here already translated (``wire.parse``), so this module knows
no pydantic and loads in no time.

``ClientRequestError`` is also the error a request *we* sent raises when the client answers with an error.
"""

from __future__ import annotations

import logging
from typing import Any

from hermes_acp.errors import (
    ConfigError,
    HermesError,
    InvalidParamsError,
    ProviderAuthError,
    SessionBusyError,
    SessionNotFoundError,
    StorageError,
    WireErrorCode,
)

__all__ = ["AUTH_REQUIRED", "CANCELLED", "RESOURCE_NOT_FOUND", "ClientRequestError", "to_wire"]

AUTH_REQUIRED: WireErrorCode = -32000
RESOURCE_NOT_FOUND: WireErrorCode = -32002
CANCELLED: dict[str, Any] = {"code": -32800, "message": "Request cancelled"}
_log = logging.getLogger("hermes_acp.protocol")


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


def to_wire(exc: BaseException, method: str) -> dict[str, Any]:
    """The JSON-RPC error object a client should see for ``exc`` raised while handling ``method``."""
    match exc:
        case ClientRequestError():
            return _error(exc.code, exc.message, exc.data)
        case InvalidParamsError():
            data: dict[str, Any] = {**exc.data}
            if exc.field:
                data["field"] = exc.field
            return _error(-32602, f"Invalid params: {exc}", data or None)
        case SessionNotFoundError():
            return _error(RESOURCE_NOT_FOUND, str(exc), {"sessionId": exc.session_id, "uri": exc.session_id})
        case ProviderAuthError():
            return _error(AUTH_REQUIRED, f"Authentication required: {exc}", {"provider": exc.provider})
        case SessionBusyError():
            return _error(-32603, str(exc), {"reason": "busy"})
        case ConfigError():
            return _error(-32603, f"hermes-acp configuration error: {exc}", {"reason": "config"})
        case StorageError():
            return _error(-32603, f"StorageError: {exc}", {"error": "StorageError", "cause": exc.cause})
        case HermesError():
            return _error(-32603, f"{type(exc).__name__}: {exc}", {"error": type(exc).__name__})
        case _:
            _log.error("unexpected error while handling %s", method, exc_info=exc)
            return _error(-32603, f"Internal error while handling {method}: {type(exc).__name__}: {exc}")


def _error(code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return error
