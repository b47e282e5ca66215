"""One MCP server of one session: its tools, and its requests under the at-most-once rules, for the model.

``ServerConnection`` is the editor's-MCP-server user of the one ``SupervisedConnection`` (``supervisor``), which
owns the connection's life: it runs in the session's MCP task group (inside the session's owner task, see
docs/architecture.md §6.2), connects at once, reconnects when the next request needs it, and bounds every wait. What
this module adds:

- each new connection lists the server's tools (``setup``); the last listing is kept while the connection is
  rebuilt, so the tool surface stays stable;
- the timeouts (``McpTimeouts``: connecting, each call, each list/read), module constants read when a
  ``McpTimeouts`` is made (tests shorten them);
- a tool without ``readOnlyHint`` is not replay-safe, lists and reads are; the supervisor's failures become the
  model's errors: ``OutcomeUnknownError`` (``timeout_outcome_unknown`` / ``transport_outcome_unknown``) for a
  mutating call whose answer was lost, ``ToolTimeoutError`` / ``ToolError`` for a read lost twice,
  ``McpServerUnavailableError`` when nothing could be sent, ``ToolError`` for an error answer.

This module does not import the mcp SDK.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import structlog

from hermes_acp.core.bounds import MAX_MCP_TOOLS_PER_SERVER
from hermes_acp.errors import McpServerUnavailableError, OutcomeUnknownError, ToolError, ToolTimeoutError

from ._failures import NotConnected, RequestLost, ServerRejected
from .naming import sanitise
from .specs import HttpSpec, StdioSpec
from .supervisor import LinkState, Live, SupervisedConnection
from .wire_port import McpWire, OpenWire

__all__ = [
    "CALL_TIMEOUT_S",
    "CONNECT_TIMEOUT_S",
    "LIST_TIMEOUT_S",
    "McpTimeouts",
    "ServerConnection",
]

T = TypeVar("T")
CONNECT_TIMEOUT_S = 30.0
"""Spawn or connect, ``initialize`` and the first ``tools/list`` of one server."""
CALL_TIMEOUT_S = 120.0
"""One ``tools/call``."""
LIST_TIMEOUT_S = 30.0
"""One list, ``resources/read`` or ``prompts/get``."""
_log = structlog.get_logger("hermes_acp.mcp")


@dataclass(frozen=True, slots=True)
class McpTimeouts:
    connect_s: float = field(default_factory=lambda: CONNECT_TIMEOUT_S)
    call_s: float = field(default_factory=lambda: CALL_TIMEOUT_S)
    list_s: float = field(default_factory=lambda: LIST_TIMEOUT_S)


class ServerConnection:
    def __init__(
        self,
        spec: StdioSpec | HttpSpec,
        index: int,
        *,
        cwd: Path,
        stderr_dir: Path | None,
        timeouts: McpTimeouts,
        on_change: Callable[[], None] = lambda: None,
        open_wire: OpenWire | None = None,
    ):
        self.spec = spec
        self.index = index
        self.timeouts = timeouts
        self.tools: list[dict[str, Any]] = []
        """The last ``tools/list`` (kept while the connection is rebuilt, so the tool surface stays stable), at most
        ``MAX_MCP_TOOLS_PER_SERVER`` of them."""
        self.tools_cut = False
        """The server listed more tools than are offered."""
        self.listing_version = 0
        self.has_resources = False
        self.has_prompts = False
        stderr_log = stderr_dir / f"{sanitise(spec.name)}.log" if stderr_dir is not None else None
        self.link: SupervisedConnection[None] = SupervisedConnection(
            spec,
            setup=self._list,
            connect_s=timeouts.connect_s,
            cwd=cwd,
            stderr_log=stderr_log,
            on_change=on_change,
            open_wire=open_wire,
        )

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def state(self) -> LinkState:
        return self.link.state

    @property
    def error(self) -> str | None:
        """Why the last attempt failed or the connection ended."""
        return self.link.error

    @property
    def attempts(self) -> int:
        return self.link.attempts

    @property
    def connections(self) -> int:
        return self.link.connections

    @property
    def settling(self) -> bool:
        return self.link.settling

    @property
    def offered(self) -> bool:
        """Whether its tools belong on the tool surface: listed at least once and not failed since."""
        return self.listing_version > 0 and self.state != LinkState.FAILED

    async def supervise(self) -> None:
        """Run the connection (in the owner's task group) until ``close()``."""
        await self.link.supervise()

    def close(self) -> None:
        self.link.close()

    async def wait_for(self, predicate: Callable[[ServerConnection], bool]) -> None:
        """Until ``predicate(self)`` holds, re-checked at every state change. Unbounded: bound it."""
        await self.link.wait_for(lambda _: predicate(self))

    async def _list(self, wire: McpWire) -> None:
        listed = await wire.list_tools(limit=MAX_MCP_TOOLS_PER_SERVER + 1)
        tools = listed[:MAX_MCP_TOOLS_PER_SERVER]
        self.tools_cut = len(listed) > MAX_MCP_TOOLS_PER_SERVER
        self.has_resources = wire.has_resources
        self.has_prompts = wire.has_prompts
        if tools != self.tools or self.listing_version == 0:
            self.tools = tools
            self.listing_version += 1
        _log.info("MCP server listed its tools", server=self.name, tools=len(tools))

    async def call_tool(self, tool: str, arguments: dict[str, Any], *, read_only: bool) -> dict[str, Any]:
        """``tools/call``; only a read-only tool is sent again after a lost answer."""
        what = f"{self.name}/{tool}"
        return await self._guarded(
            what,
            self.link.call(tool, arguments, replay_safe=read_only, timeout_s=self.timeouts.call_s),
        )

    async def read(self, op: Callable[[McpWire], Awaitable[dict[str, Any]]], what: str) -> dict[str, Any]:
        """A read-only request (lists, ``resources/read``, ``prompts/get``)."""

        def on(live: Live[None]) -> Awaitable[dict[str, Any]]:
            return op(live.wire)

        full = f"{self.name}/{what}"
        return await self._guarded(
            full, self.link.request(on, what=full, timeout_s=self.timeouts.list_s, replay_safe=True)
        )

    async def list_resources(self) -> list[dict[str, Any]]:
        result = await self.read(lambda wire: _as_result("resources", wire.list_resources()), "resources/list")
        return list(result["resources"])

    async def list_prompts(self) -> list[dict[str, Any]]:
        result = await self.read(lambda wire: _as_result("prompts", wire.list_prompts()), "prompts/list")
        return list(result["prompts"])

    async def _guarded(self, what: str, request: Awaitable[T]) -> T:
        """The supervisor's failures as the model's errors."""
        try:
            return await request
        except NotConnected as exc:
            raise McpServerUnavailableError(str(exc)) from None
        except ServerRejected as exc:
            raise ToolError(f"{what}: the server answered with an error: {exc}") from exc
        except RequestLost as lost:
            if not lost.replay_safe:
                raise OutcomeUnknownError(
                    f"{what}: {lost.detail}. The tool may or may not have acted; it was not retried."
                    " Check the current state before trying again.",
                    code=lost.code,
                ) from None
            if lost.failure == "timeout":
                raise ToolTimeoutError(f"{what}: {lost.detail} (tried twice)") from None
            raise ToolError(f"{what}: {lost.detail} (tried twice)") from None


async def _as_result(key: str, items: Awaitable[list[dict[str, Any]]]) -> dict[str, Any]:
    return {key: await items}
