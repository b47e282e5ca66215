"""The seam under the supervised connection: one live, initialized MCP connection (``McpWire``) and how one is
opened from a spec (``OpenWire``).

``_wire`` is the adapter that implements both over the mcp SDK (stdio, streamable HTTP, SSE); a test double can
implement them in memory (``SupervisedConnection`` and ``McpServers`` take an ``open_wire``). Results and lists are
wire-shaped dicts; a broken transport raises ``TransportDropped``, an error answer ``ServerRejected``; ``dropped``
is set when the connection ends for any reason. ``WireHooks`` is what the connection hands the server's own requests
and notifications to (questions for the user, the session's roots, list changes) and how it signs in; ``SignInFlow``
is the interactive sign-in the same adapter (``_oauth``) runs. This module imports nothing of the SDK.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

import anyio

from .auth import WireAuth
from .specs import HttpSpec, StdioSpec

__all__ = ["McpWire", "OpenWire", "ProgressFn", "SignInFlow", "WireHooks"]

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
"""``notifications/progress`` of one request: (progress, total, message), as the server sent them."""


@dataclass(frozen=True, slots=True)
class WireHooks:
    """What one connection hands the server's own requests and notifications to; each is optional."""

    elicit: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] | None = None
    """``elicitation/create``: its params as sent (wire-shaped) to the result to answer. A ``ValueError`` answers
    the server an invalid-params error with its message. None: the capability is not advertised."""
    roots: Callable[[], list[dict[str, Any]]] | None = None
    """``roots/list``: the roots (``{"uri": "file://...", "name": ...}``). None: not advertised."""
    notified: Callable[[str, dict[str, Any]], Awaitable[None]] | None = None
    """Every server notification but progress (method, params), each in a task of its own (bound what it awaits)."""
    auth: WireAuth | None = None
    """Sign in with the stored tokens (never asking the user: ``SignInRequired`` when they are missing or refused)."""


class McpWire(Protocol):
    @property
    def dropped(self) -> anyio.Event:
        """Set when the connection ends (the server went away, or the owner ended it)."""
        ...

    @property
    def has_resources(self) -> bool: ...

    @property
    def has_prompts(self) -> bool: ...

    @property
    def server_version(self) -> str | None: ...

    async def list_tools(self, *, limit: int | None = None) -> list[dict[str, Any]]:
        """The server's tools (pages followed until ``limit`` of them are known, when given)."""
        ...

    async def list_resources(self) -> list[dict[str, Any]]: ...

    async def list_prompts(self) -> list[dict[str, Any]]: ...

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, on_progress: ProgressFn | None = None
    ) -> dict[str, Any]:
        """``tools/call``; ``on_progress`` gets the server's progress notifications for it."""
        ...

    async def roots_changed(self) -> None:
        """Send ``notifications/roots/list_changed``."""
        ...

    async def read_resource(self, uri: str) -> dict[str, Any]: ...

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> dict[str, Any]: ...


class OpenWire(Protocol):
    def __call__(
        self,
        spec: StdioSpec | HttpSpec,
        *,
        cwd: Path | None,
        errlog: TextIO,
        connect_timeout_s: float,
        dropped: anyio.Event,
        hooks: WireHooks | None = None,
    ) -> AbstractAsyncContextManager[McpWire]:
        """Connect and initialize; raises ``TransportDropped`` / ``ServerRejected`` when it cannot, and
        ``SignInRequired`` when the server wants a sign-in the stored tokens cannot give."""
        ...


class SignInFlow(Protocol):
    def __call__(
        self,
        spec: HttpSpec,
        auth: WireAuth,
        *,
        open_url: Callable[[str], Awaitable[bool]],
        wait_s: float,
        pasted: Callable[[], Awaitable[dict[str, str]]] | None = None,
    ) -> Awaitable[None]:
        """Sign in interactively: discovery, registration, the authorization page handed to ``open_url`` (False:
        the user declined), the redirect awaited on a loopback listener for at most ``wait_s`` — or, from
        ``pasted``, its parameters (``auth.redirect_query``) as the user pasted the address —, the tokens stored.
        Raises ``SignInFailed`` saying why it did not work."""
        ...
