"""The exception tree of hermes_acp, and every error code the model, the editor or the wire sees.

Every error we raise on purpose is a ``HermesError``. The tree says who has to act::

    HermesError
    ├── ConfigError                  the user's config.toml or environment is wrong (names key and file)
    ├── InvalidParamsError           a client request carries a bad value (→ JSON-RPC -32602)
    │   ├── UnknownModeError         set_mode / set_config_option with a mode id we do not offer
    │   └── UnknownModelError        set_model / set_config_option with a model id not in the catalog
    ├── SessionError
    │   ├── SessionNotFoundError     no session with that id (→ ACP resource-not-found, -32002)
    │   │   └── SessionNotOpenError  not open in this connection (it may be stored: load or resume it first)
    │   └── SessionBusyError         the request needs an idle session and a turn is running
    ├── ProviderError                a model provider failed (the turn ends with a notice saying why)
    │   ├── ProviderAuthError        missing or rejected credentials (→ ACP auth_required, -32000)
    │   │   └── NoProviderError      no usable provider is configured at all
    │   ├── ProviderRateLimitError   HTTP 429 after every retry
    │   ├── ProviderUnavailableError connection reset, a stream cut, 5xx after every retry
    │   │   └── ProviderUnreachableError  nothing answers at the provider's address (connection refused)
    │   ├── ProviderTimeoutError     the provider did not answer within the configured timeout
    │   ├── ProviderRequestError     the provider rejected the request (4xx other than auth/429)
    │   │   └── ContextLengthError   … because the prompt does not fit the model's context window
    │   ├── ProviderStreamError      the stream broke or carried something we cannot read
    │   └── ScriptExhaustedError     (providers.scripted, the test double) asked for more than its script
    ├── TurnFailedError              a prompt's turn did not finish (``TurnFailure``: → its JSON-RPC error)
    ├── ToolError                    a tool failed; goes back to the model as its result, never to the wire
    │   ├── ToolInputError           arguments invalid, unknown tool, bad JSON
    │   ├── PermissionDeniedError    the user (or the mode) refused
    │   ├── HardBlockedError         refused in every mode without asking
    │   ├── ToolTimeoutError         the tool ran past its time limit
    │   ├── OutcomeUnknownError      a mutation may or may not have happened; never retried
    │   ├── McpServerUnavailableError  an editor-supplied MCP server could not be reached; nothing was sent
    │   └── ComputerUseError         the desktop driver refused or failed
    │       ├── DriverUnavailableError  no cua-driver could be started
    │       └── ComputerUseRefusal   (computer_use.results) a refusal with its own code and details
    │           └── DriverRefusal    (computer_use.results) the driver answered isError, with its own code
    └── StorageError                 the session store failed (``cause``); the turn stops, nothing runs

``ErrorCode`` lists every code a failed tool call carries (its card's ``rawOutput`` and the model's result say
it); a cua-driver's own refusal codes pass through as it sent them (``DriverCode``). ``WireErrorCode`` lists the
JSON-RPC error codes we answer with. ``TurnFailure`` is the one description of a turn that did not finish (the
provider failed after its retries, the configuration let no model work, a budget or the request limit was
reached): its ``kind`` comes from the ``ProviderError`` class one to one (``failure_of``), the JSON-RPC error of
``session/prompt`` carries it as ``data`` and ``hermes-acp exec`` as its result's ``failure`` (docs/ci.md).
Translation to JSON-RPC happens in exactly one place (``hermes_acp.jsonrpc.boundary``). This module imports nothing
from the SDKs: adapters translate foreign exceptions into these classes where they import the library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal, NewType

__all__ = [
    "ComputerUseError",
    "ConfigError",
    "ContextLengthError",
    "DriverCode",
    "DriverUnavailableError",
    "ErrorCode",
    "FailureKind",
    "HardBlockedError",
    "HermesError",
    "InvalidParamsError",
    "McpServerUnavailableError",
    "NoProviderError",
    "OutcomeUnknownError",
    "PermissionDeniedError",
    "ProviderAuthError",
    "ProviderError",
    "ProviderRateLimitError",
    "ProviderRequestError",
    "ProviderStreamError",
    "ProviderTimeoutError",
    "ProviderUnavailableError",
    "ProviderUnreachableError",
    "SessionBusyError",
    "SessionError",
    "SessionNotFoundError",
    "SessionNotOpenError",
    "StorageCause",
    "StorageError",
    "ToolError",
    "ToolErrorCode",
    "ToolInputError",
    "ToolTimeoutError",
    "TurnFailedError",
    "TurnFailure",
    "UnknownModeError",
    "UnknownModelError",
    "WireErrorCode",
    "failure_of",
]


ErrorCode = Literal[
    # the tool seam
    "tool_error",
    "invalid_arguments",
    "permission_denied",
    "hard_blocked",
    "timeout",
    "nonzero_exit",
    # at most once: a mutation whose outcome is unknown
    "timeout_outcome_unknown",
    "transport_outcome_unknown",
    # a turn that stopped around a call (settlements)
    "not_run",
    "cancelled",
    "interrupted",
    "outcome_unknown",
    # subagents (a ``delegate`` call whose child did not finish its report)
    "subagent_failed",
    "subagent_budget",
    # MCP servers
    "mcp_server_unavailable",
    "mcp_tool_error",
    # computer_use
    "computer_use_error",
    "driver_unavailable",
    "driver_error",
    "driver_protocol_error",
    "driver_unresponsive",
    "no_target",
    "stale_target",
    "no_matching_window",
    "input_target_mismatch",
    "unsupported_action",
    "unsupported_argument",
    "foreground_unsupported",
    "unknown_element",
    "element_unaddressable",
    "no_screenshot",
    "desktop_permission_missing",
]
"""Every error code of ours a failed tool call carries."""
DriverCode = NewType("DriverCode", str)
"""A code the cua-driver chose, passed on as it came."""
ToolErrorCode = ErrorCode | DriverCode
WireErrorCode = Literal[-32700, -32600, -32601, -32602, -32603, -32800, -32000, -32002, -32022]
"""The JSON-RPC errors we answer with: parse error, invalid request, method not found, invalid params, internal
error, request cancelled, ACP auth_required, ACP resource_not_found, ACP unsupported protocol version (v2's
``initialize``)."""


class HermesError(Exception):
    """Base of every error hermes_acp raises on purpose."""


class ConfigError(HermesError):
    """The configuration (config.toml or environment) is invalid; the message names the key and the file."""


class InvalidParamsError(HermesError):
    """A client request carries a value we cannot accept; ``field`` names it."""

    def __init__(self, message: str, *, field: str | None = None, data: dict[str, object] | None = None):
        super().__init__(message)
        self.field = field
        self.data = data or {}


class UnknownModeError(InvalidParamsError):
    """A mode id that is not one of the session's modes."""


class UnknownModelError(InvalidParamsError):
    """A model id that is not in the catalog; the message suggests close matches."""


class SessionError(HermesError):
    """A session-level failure."""


class SessionNotFoundError(SessionError):
    """No live or stored session has this id."""

    def __init__(self, session_id: str):
        super().__init__(f"Session not found: {session_id!r}")
        self.session_id = session_id


class SessionNotOpenError(SessionNotFoundError):
    """The session is not open in this connection (not live, or not attached to it): it may well be stored, so the
    message never says it does not exist."""

    def __init__(self, session_id: str):
        super().__init__(session_id)
        self.args = (
            f"Session {session_id!r} is not open in this connection: open it with session/load or session/resume first",
        )


class SessionBusyError(SessionError):
    """The request needs an idle session, and a turn is running."""


class ProviderError(HermesError):
    """A model provider failed."""

    def __init__(self, message: str, *, provider: str | None = None, status: int | None = None):
        super().__init__(message)
        self.provider = provider
        self.status = status
        self.retries = 0
        """How many times the request was sent again before this error was given up on."""


class ProviderAuthError(ProviderError):
    """Credentials are missing or were rejected (HTTP 401/403)."""


class NoProviderError(ProviderAuthError):
    """No usable provider is configured; the message says what to set."""


class ProviderRateLimitError(ProviderError):
    """HTTP 429, still after every retry."""


class ProviderUnavailableError(ProviderError):
    """Connection failure or HTTP 5xx, still after every retry."""


class ProviderUnreachableError(ProviderUnavailableError):
    """Nothing answers at the provider's address (connection refused, no route), still after every retry."""


class ProviderTimeoutError(ProviderError):
    """The provider did not answer within the configured timeout."""


class ProviderRequestError(ProviderError):
    """The provider rejected the request (HTTP 4xx other than 401/403/429)."""


class ContextLengthError(ProviderRequestError):
    """The provider refused the request because it does not fit the model's context window (compact, then retry)."""


class ProviderStreamError(ProviderError):
    """The response stream broke off or carried something unreadable."""


FailureKind = Literal[
    "unreachable",
    "unauthorized",
    "model_not_found",
    "rate_limited",
    "server_error",
    "timeout",
    "stream_cut",
    "context_length",
    "bad_request",
    "config",
    "budget",
    "turn_requests",
]
"""Why a turn did not finish: what the provider did after its retries (``failure_of``), the configuration letting no
model work (``config``), or a limit reached (``budget``: ``[budget]``; ``turn_requests``: ``max_turn_requests``)."""
LIMIT_KINDS: Final[frozenset[FailureKind]] = frozenset({"budget", "turn_requests"})
"""Kinds that end a turn with a stop reason (``max_turn_requests``), not with an error."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnFailure:
    """What stopped a turn before a finished answer, in one object every rendering shares: the JSON-RPC error's
    ``data`` of a v1 ``session/prompt``, a v2 turn's end, ``hermes-acp exec``'s result and exit code."""

    kind: FailureKind
    message: str
    """For people: the provider's own words (redacted, prefixed with the provider id), or the limit's sentence."""
    provider: str | None = None
    model: str | None = None
    status: int | None = None
    """The HTTP status the provider answered with; None when nothing answered, or for a limit."""
    retries: int = 0
    limit: str | None = None
    """The ``[budget]`` key (``session_tokens``…) or ``max_turn_requests`` that was reached."""

    @property
    def is_error(self) -> bool:
        """The turn failed (answered with an error); False for a limit (a stop reason)."""
        return self.kind not in LIMIT_KINDS

    @property
    def sentence(self) -> str:
        """One sentence saying what happened (a JSON-RPC error's ``message``, ``exec``'s last line on stderr)."""
        if self.kind == "config":
            return f"No model can work: {self.message}"
        if self.is_error:
            return f"The model request failed: {self.message}"
        return self.message

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"kind": self.kind, "message": self.message}
        if self.is_error:
            found |= {"provider": self.provider, "model": self.model, "status": self.status, "retries": self.retries}
        else:
            found["limit"] = self.limit
        return found


def failure_of(exc: ProviderError, *, model: str | None = None) -> TurnFailure:
    """The failure a provider error that ended a turn stands for (one kind per class; the status refines two)."""
    kind: FailureKind
    match exc:
        case NoProviderError():
            kind = "config"
        case ProviderAuthError():
            kind = "unauthorized"
        case ContextLengthError():
            kind = "context_length"
        case ProviderRequestError():
            kind = "model_not_found" if exc.status == 404 else "bad_request"
        case ProviderRateLimitError():
            kind = "rate_limited"
        case ProviderTimeoutError():
            kind = "timeout"
        case ProviderStreamError():
            kind = "stream_cut"
        case ProviderUnreachableError():
            kind = "unreachable"
        case ProviderUnavailableError():
            kind = "server_error" if exc.status is not None else "stream_cut"
        case _:
            kind = "bad_request"
    return TurnFailure(
        kind=kind, message=str(exc), provider=exc.provider, model=model, status=exc.status, retries=exc.retries
    )


class TurnFailedError(HermesError):
    """A prompt's turn ended without a finished answer because of ``failure`` (the transcript says why too)."""

    def __init__(self, failure: TurnFailure):
        super().__init__(failure.sentence)
        self.failure = failure


class ToolError(HermesError):
    """A tool failed. The message goes back to the model as the tool's result; the client sees ``failed``."""

    code: ToolErrorCode = "tool_error"


class ToolInputError(ToolError):
    """The model's arguments are invalid, the JSON does not parse, or the tool does not exist."""

    code: ToolErrorCode = "invalid_arguments"


class PermissionDeniedError(ToolError):
    """The user or the session mode refused this call."""

    code: ToolErrorCode = "permission_denied"


class HardBlockedError(ToolError):
    """The call is refused in every mode, without asking."""

    code: ToolErrorCode = "hard_blocked"


class ToolTimeoutError(ToolError):
    """The tool ran past its time limit and was stopped."""

    code: ToolErrorCode = "timeout"


class OutcomeUnknownError(ToolError):
    """A mutating call timed out or lost its transport: it may or may not have happened. Never retried."""

    def __init__(self, message: str, *, code: Literal["timeout_outcome_unknown", "transport_outcome_unknown"]):
        super().__init__(message)
        self.code = code


class ComputerUseError(ToolError):
    """The desktop driver refused or failed an action."""

    code: ToolErrorCode = "computer_use_error"


class DriverUnavailableError(ComputerUseError):
    """No cua-driver could be started for this session."""

    code: ToolErrorCode = "driver_unavailable"


class McpServerUnavailableError(ToolError):
    """An editor-supplied MCP server could not be (re)connected for this call; nothing was sent."""

    code: ToolErrorCode = "mcp_server_unavailable"


StorageCause = Literal["disk_full", "read_only", "corrupt", "locked", "io_error", "other"]
"""Why the session store failed, as far as the store can tell."""


class StorageError(HermesError):
    """The session store failed. Nothing runs on state that could not be stored. ``cause`` says why."""

    def __init__(self, message: str, *, cause: StorageCause = "other"):
        super().__init__(message)
        self.cause: StorageCause = cause
