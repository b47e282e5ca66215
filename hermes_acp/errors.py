"""The exception tree of hermes_acp.

Every error we raise on purpose is a ``HermesError``. The tree says who has to act::

    HermesError
    ├── ConfigError                  the user's config.toml or environment is wrong (names key and file)
    ├── InvalidParamsError           a client request carries a bad value (→ JSON-RPC -32602)
    │   ├── UnknownModeError         set_mode / set_config_option with a mode id we do not offer
    │   └── UnknownModelError        set_model / set_config_option with a model id not in the catalog
    ├── SessionError
    │   ├── SessionNotFoundError     no session with that id (→ ACP resource-not-found, -32002)
    │   └── SessionBusyError         the request needs an idle session and a turn is running
    ├── ProviderError                a model provider failed
    │   ├── ProviderAuthError        missing or rejected credentials (→ ACP auth_required, -32000)
    │   │   └── NoProviderError      no usable provider is configured at all
    │   ├── ProviderRateLimitError   HTTP 429 after every retry
    │   ├── ProviderUnavailableError connection refused/reset, 5xx after every retry
    │   ├── ProviderTimeoutError     the provider did not answer within the configured timeout
    │   ├── ProviderRequestError     the provider rejected the request (4xx other than auth/429)
    │   │   └── ContextLengthError   … because the prompt does not fit the model's context window
    │   └── ProviderStreamError      the stream broke or carried something we cannot read
    ├── ToolError                    a tool failed; goes back to the model, never to the wire
    │   ├── ToolInputError           arguments invalid, unknown tool, bad JSON
    │   ├── PermissionDeniedError    the user (or the mode) refused
    │   ├── HardBlockedError         refused in every mode without asking
    │   ├── ToolTimeoutError         the tool ran past its time limit
    │   ├── OutcomeUnknownError      a mutation may or may not have happened; never retried
    │   └── ComputerUseError         the desktop driver refused or failed
    │       └── DriverUnavailableError  no cua-driver could be started
    ├── McpServerError               an editor-supplied MCP server could not be reached
    ├── StorageError                 the session store failed; the turn stops, nothing runs
    └── TurnLimitExceededError       max_turn_requests reached

Translation to JSON-RPC happens in exactly one place (``hermes_acp.protocol.boundary``). This module imports
nothing from the SDKs: adapters translate foreign exceptions into these classes where they import the library.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "ComputerUseError",
    "ConfigError",
    "ContextLengthError",
    "DriverUnavailableError",
    "HardBlockedError",
    "HermesError",
    "InvalidParamsError",
    "McpServerError",
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
    "StorageCause",
    "StorageError",
    "ToolError",
    "ToolInputError",
    "ToolTimeoutError",
    "TurnLimitExceededError",
    "UnknownModeError",
    "UnknownModelError",
]


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

    code: str = "tool_error"


class ToolInputError(ToolError):
    """The model's arguments are invalid, the JSON does not parse, or the tool does not exist."""

    code = "invalid_arguments"


class PermissionDeniedError(ToolError):
    """The user or the session mode refused this call."""

    code = "permission_denied"


class HardBlockedError(ToolError):
    """The call is refused in every mode, without asking."""

    code = "hard_blocked"


class ToolTimeoutError(ToolError):
    """The tool ran past its time limit and was stopped."""

    code = "timeout"


class OutcomeUnknownError(ToolError):
    """A mutating call timed out or lost its transport: it may or may not have happened. Never retried."""

    def __init__(self, message: str, *, code: str):
        super().__init__(message)
        self.code = code


class ComputerUseError(ToolError):
    """The desktop driver refused or failed an action."""

    code = "computer_use_error"


class DriverUnavailableError(ComputerUseError):
    """No cua-driver could be started for this session."""

    code = "driver_unavailable"


class McpServerError(HermesError):
    """An editor-supplied MCP server could not be started or reached."""


StorageCause = Literal["disk_full", "read_only", "corrupt", "locked", "io_error", "other"]
"""Why the session store failed, as far as the store can tell."""


class StorageError(HermesError):
    """The session store failed. Nothing runs on state that could not be stored. ``cause`` says why."""

    def __init__(self, message: str, *, cause: StorageCause = "other"):
        super().__init__(message)
        self.cause: StorageCause = cause


class TurnLimitExceededError(HermesError):
    """The turn reached ``agent.max_turn_requests``."""
