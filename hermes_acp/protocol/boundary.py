"""The one place where our exceptions become JSON-RPC errors, and where post-response work is queued.

``ErrorBoundary`` wraps the SDK's message router: every request and notification passes through it, so every
error — ours (``HermesError``), pydantic's (invalid params), or an unexpected bug — becomes the right JSON-RPC
error with a message that says what was wrong (DESIGN §4.9). Nothing answers ``null`` instead of an error.

``after_response`` lets a handler schedule work that must happen *after* its response is on the wire (e.g.
``available_commands_update`` after ``session/new``, which JetBrains requires): the callbacks are kept in a context
variable of the request's task and run by the front door right after it writes that response.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from acp.exceptions import RequestError
from pydantic import ValidationError

from hermes_acp.errors import (
    ConfigError,
    HermesError,
    InvalidParamsError,
    ProviderAuthError,
    SessionBusyError,
    SessionNotFoundError,
)

__all__ = [
    "AUTH_REQUIRED",
    "RESOURCE_NOT_FOUND",
    "ErrorBoundary",
    "after_response",
    "take_after_response",
    "to_wire",
]

AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002
_log = structlog.get_logger("hermes_acp.protocol")
_after_response: contextvars.ContextVar[list[Callable[[], Awaitable[None]]] | None] = contextvars.ContextVar(
    "hermes_acp_after_response", default=None
)

Router = Callable[[str, Any, bool], Awaitable[Any]]


def after_response(callback: Callable[[], Awaitable[None]]) -> None:
    """Run ``callback`` once the current request's response has been written."""
    pending = _after_response.get()
    if pending is None:
        raise RuntimeError("after_response() called outside a request handler")
    pending.append(callback)


def take_after_response() -> list[Callable[[], Awaitable[None]]]:
    """The callbacks queued by the current task's request (and forget them)."""
    pending = _after_response.get()
    if not pending:
        return []
    _after_response.set(None)
    return pending


class ErrorBoundary:
    """Wraps the SDK router; installed in place of it by ``HermesAgent.on_connect``."""

    def __init__(self, router: Router):
        self._router = router

    async def __call__(self, method: str, params: Any, is_notification: bool) -> Any:
        if not is_notification:
            _after_response.set([])
        try:
            return await self._router(method, params, is_notification)
        except Exception as exc:
            error = to_wire(exc, method)
            if is_notification:
                _log.warning("notification failed", method=method, error=str(error))
                return None
            raise error from exc


def to_wire(exc: BaseException, method: str) -> RequestError:
    """Map any exception to the JSON-RPC error a client should see."""
    match exc:
        case RequestError() if exc.code == -32601:
            return RequestError(-32601, f"Method not found: {method}", {"method": method})
        case RequestError():
            return exc
        case ValidationError():
            problems = [_problem(e) for e in exc.errors(include_url=False)]
            message = "Invalid params: " + "; ".join(f"{p['field']}: {p['message']}" for p in problems)
            return RequestError(-32602, message, {"errors": problems})
        case InvalidParamsError():
            data: dict[str, Any] = {**exc.data}
            if exc.field:
                data["field"] = exc.field
            return RequestError(-32602, f"Invalid params: {exc}", data or None)
        case SessionNotFoundError():
            return RequestError(RESOURCE_NOT_FOUND, str(exc), {"sessionId": exc.session_id, "uri": exc.session_id})
        case ProviderAuthError():
            return RequestError(AUTH_REQUIRED, f"Authentication required: {exc}", {"provider": exc.provider})
        case SessionBusyError():
            return RequestError(-32603, str(exc), {"reason": "busy"})
        case ConfigError():
            return RequestError(-32603, f"hermes-acp configuration error: {exc}", {"reason": "config"})
        case HermesError():
            return RequestError(-32603, f"{type(exc).__name__}: {exc}", {"error": type(exc).__name__})
        case _:
            _log.error("unexpected error", method=method, exc_info=exc)
            return RequestError(-32603, f"Internal error while handling {method}: {type(exc).__name__}: {exc}")


def _problem(error: Any) -> dict[str, str]:
    field = ""
    for part in error.get("loc", ()):
        field += f"[{part}]" if isinstance(part, int) else (f".{part}" if field else str(part))
    field = field or "params"
    message = str(error.get("msg", "invalid"))
    if error.get("type") == "missing":
        message = "required"
    return {"field": _camel(field), "message": message}


def _camel(dotted: str) -> str:
    def one(part: str) -> str:
        head, *rest = part.split("_")
        return head + "".join(w.title() for w in rest)

    return ".".join(one(p) for p in dotted.split("."))
