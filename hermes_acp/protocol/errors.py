"""Our exceptions as ACP's errors: the ``ErrorMap`` this server hands its dispatcher (``jsonrpc.boundary``).

The ACP resource-not-found (-32002) names the session, auth_required (-32000) says what to configure, and every
other ``HermesError`` is -32603 with a message and data saying what was wrong (busy, the configuration, the store).
An exception that is not ours is left to the boundary (-32603, logged as a bug).
"""

from __future__ import annotations

from typing import Any

from hermes_acp.errors import (
    ConfigError,
    HermesError,
    ProviderAuthError,
    SessionBusyError,
    SessionNotFoundError,
    StorageError,
    WireErrorCode,
)
from hermes_acp.jsonrpc.boundary import error

__all__ = ["AUTH_REQUIRED", "RESOURCE_NOT_FOUND", "acp_error"]

AUTH_REQUIRED: WireErrorCode = -32000
RESOURCE_NOT_FOUND: WireErrorCode = -32002


def acp_error(exc: BaseException) -> dict[str, Any] | None:
    """The ACP error object for one of our exceptions; None for one that is not ours."""
    match exc:
        case SessionNotFoundError():
            return error(RESOURCE_NOT_FOUND, str(exc), {"sessionId": exc.session_id, "uri": exc.session_id})
        case ProviderAuthError():
            return error(AUTH_REQUIRED, f"Authentication required: {exc}", {"provider": exc.provider})
        case SessionBusyError():
            return error(-32603, str(exc), {"reason": "busy"})
        case ConfigError():
            return error(-32603, f"hermes-acp configuration error: {exc}", {"reason": "config"})
        case StorageError():
            return error(-32603, f"StorageError: {exc}", {"error": "StorageError", "cause": exc.cause})
        case HermesError():
            return error(-32603, f"{type(exc).__name__}: {exc}", {"error": type(exc).__name__})
        case _:
            return None
