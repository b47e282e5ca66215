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
    │   ├── ProviderUnavailableError connection refused/reset, 5xx after every retry
    │   ├── ProviderTimeoutError     the provider did not answer within the configured timeout
    │   ├── ProviderRequestError     the provider rejected the request (4xx other than auth/429)
    │   │   └── ContextLengthError   … because the prompt does not fit the model's context window
    │   ├── ProviderStreamError      the stream broke or carried something we cannot read
    │   └── ScriptExhaustedError     (providers.scripted, the test double) asked for more than its script
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
JSON-RPC error codes we answer with. Translation to JSON-RPC happens in exactly one place
(``hermes_acp.jsonrpc.boundary``). This module imports nothing from the SDKs: adapters translate foreign
exceptions into these classes where they import the library.
"""

from __future__ import annotations

from typing import Literal, NewType

__all__ = [
    "ComputerUseError",
    "ConfigError",
    "ContextLengthError",
    "DriverCode",
    "DriverUnavailableError",
    "ErrorCode",
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
    "UnknownModeError",
    "UnknownModelError",
    "WireErrorCode",
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


class ProviderAuthError(ProviderError):
    """Credentials are missing or were rejected (HTTP 401/403)."""


class NoProviderError(ProviderAuthError):
    """No usable provider is configured; the message says what to set."""


class ProviderRateLimitError(ProviderError):
    """HTTP 429, still after every retry."""


class ProviderUnavailableError(ProviderError):
    """Connection failure or HTTP 5xx, still after every retry."""


class ProviderTimeoutError(ProviderError):
    """The provider did not answer within the configured timeout."""


class ProviderRequestError(ProviderError):
    """The provider rejected the request (HTTP 4xx other than 401/403/429)."""


class ContextLengthError(ProviderRequestError):
    """The provider refused the request because it does not fit the model's context window (compact, then retry)."""


class ProviderStreamError(ProviderError):
    """The response stream broke off or carried something unreadable."""


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
