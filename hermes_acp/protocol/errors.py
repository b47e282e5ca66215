"""Our exceptions as ACP's errors: the ``ErrorMap`` this server hands its dispatcher (``jsonrpc.boundary``).

The ACP resource-not-found (-32002) names the session, auth_required (-32000) says what to configure, a prompt
whose turn failed answers with its ``TurnFailure`` as ``data`` (``turn_failed``), and every other ``HermesError``
is -32603 with a message and data saying what was wrong (busy, the configuration, the store).
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
    TurnFailedError,
    TurnFailure,
    WireErrorCode,
    failure_of,
)
from hermes_acp.jsonrpc.boundary import error

__all__ = ["AUTH_REQUIRED", "RESOURCE_NOT_FOUND", "acp_error", "turn_failed"]

AUTH_REQUIRED: WireErrorCode = -32000
RESOURCE_NOT_FOUND: WireErrorCode = -32002


def acp_error(exc: BaseException) -> dict[str, Any] | None:
    """The ACP error object for one of our exceptions; None for one that is not ours."""
    match exc:
        case SessionNotFoundError():
            return error(RESOURCE_NOT_FOUND, str(exc), {"sessionId": exc.session_id, "uri": exc.session_id})
        case TurnFailedError():
            return turn_failed(exc.failure)
        case ProviderAuthError():
            return error(AUTH_REQUIRED, f"Authentication required: {exc}", failure_of(exc).to_json())
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


def turn_failed(failure: TurnFailure) -> dict[str, Any]:
    """The error a v1 ``session/prompt`` answers when its turn failed (docs/architecture.md §4.18): auth_required for
    credentials refused or missing (the editor offers its authentication methods, which are the fix), -32603 for
    the rest, as claude-agent-acp and codex-acp answer; ``message`` is the one sentence the transcript's notice also
    says, ``data`` the failure (``TurnFailure.to_json``: ``kind``, ``provider``, ``model``, ``status``,
    ``message``, ``retries``)."""
    code: WireErrorCode = AUTH_REQUIRED if failure.kind in ("unauthorized", "config") else -32603
    return error(code, failure.sentence, failure.to_json())
