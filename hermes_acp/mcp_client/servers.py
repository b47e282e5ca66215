"""``McpServers``: the MCP servers an editor gave one session — started at once, offered as tools when ready.

The session creates it from the editor's specs and enters ``running()`` in its owner task: that opens a task group
in which each server's supervised connection (``ServerConnection.supervise``) runs, and returns at once
(session/new never waits for a server). Leaving it — session close, delete, process exit — closes them; each
connection's SDK transport shuts its server down, shielded and bounded (a stdio child: stdin closed, then
SIGTERM, then SIGKILL).

Before a turn, ``prepare_turn()`` waits (bounded by ``ready_wait_s``) until no server is still starting and returns
notices for the user: a server that failed (and why), one still starting, a spec that cannot be used. Each is reported
once. ``tools()`` is the MCP part of the tool surface, derived on every call from the live state
(docs/architecture.md §4.6): the tools of every server that has listed them and has not failed since, plus
resource/prompt helpers, named by ``naming`` and sorted by name. ``status()`` describes each server for the user
(state, why it failed, the tools it offers now); ``reconnect(name)`` drops a server's connection and connects again
through its supervised connection. It knows nothing about modes, providers or ACP.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import structlog

from hermes_acp.core.bounds import MAX_MCP_TOOLS_PER_SERVER
from hermes_acp.core.flags import Changed
from hermes_acp.exec.environment import EnvPolicy
from hermes_acp.tools.base import AnyTool

from .connection import McpTimeouts, ServerConnection
from .naming import ToolKey, assign_names
from .remote_tools import UTILITY_TOOLS, McpTool, Utility, UtilityTool
from .specs import StdioSpec, UnusableSpec, parse_specs
from .supervisor import LinkState
from .wire_port import OpenWire

__all__ = ["READY_WAIT_S", "McpServers", "ServerStatus"]

READY_WAIT_S = 20.0
"""How long the first model request of a turn waits for servers that are still starting, unless told otherwise."""
_log = structlog.get_logger("hermes_acp.mcp")
_STATES: dict[LinkState, str] = {
    LinkState.IDLE: "starting",
    LinkState.STARTING: "starting",
    LinkState.READY: "ready",
    LinkState.DOWN: "disconnected (it reconnects at its next call)",
    LinkState.FAILED: "failed",
    LinkState.CLOSED: "closed",
}


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server as the user is shown it. Names and errors are as the editor and the server gave them."""

    name: str
    transport: str
    """``stdio``, ``http`` or ``sse`` (``-`` for a spec that could not be used)."""
    state: str
    error: str | None
    tools: tuple[str, ...]
    """The model-facing names of the tools it offers now (none while it is not offered)."""


class McpServers:
    def __init__(
        self,
        specs: Sequence[Mapping[str, object]],
        *,
        cwd: Path,
        stderr_dir: Path | None = None,
        timeouts: McpTimeouts | None = None,
        pass_env: Sequence[str] = (),
        open_wire: OpenWire | None = None,
        ready_wait_s: float = READY_WAIT_S,
    ):
        """``timeouts`` bound every wait of every server; ``pass_env`` names the variables a stdio server's base
        environment takes beyond the safe list; ``open_wire`` is how each connection is opened (None: the SDK
        adapter; tests give an in-memory one); ``ready_wait_s`` bounds a turn's wait for servers still starting
        (``[mcp] ready_wait_s``)."""
        parsed = parse_specs(specs, base_env=EnvPolicy.of(pass_env).base(os.environ))
        self.ready_wait_s = ready_wait_s
        self._changed = Changed()
        timeouts = timeouts or McpTimeouts()
        self.connections: list[ServerConnection] = [
            ServerConnection(
                spec,
                index,
                cwd=cwd,
                stderr_dir=stderr_dir,
                timeouts=timeouts,
                on_change=self._changed.notify,
                open_wire=open_wire,
            )
            for index, spec in enumerate(parsed)
            if not isinstance(spec, UnusableSpec)
        ]
        self.unusable: list[UnusableSpec] = [spec for spec in parsed if isinstance(spec, UnusableSpec)]
        self._reported: set[tuple[object, ...]] = set()
        self._cache_key: tuple[object, ...] | None = None
        self._cache: list[AnyTool] = []
        self._names: dict[int, tuple[str, ...]] = {}
        """The offered tool names of each connection (by index), as of the cached tool list."""
        self._running = False

    def __bool__(self) -> bool:
        return bool(self.connections or self.unusable)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[McpServers]:
        """Start every server; enter this in the session's owner task (it returns without waiting for them).

        Each server's supervisor runs in this task group and enters and leaves its own SDK connection; leaving
        closes them (``close``: bounded), and the SDK's shielded shutdown of each server runs.
        """
        async with anyio.create_task_group() as group:
            for connection in self.connections:
                group.start_soon(connection.supervise, name=f"mcp server {connection.name}")
            self._running = True
            try:
                yield self
            finally:
                self._running = False
                for connection in self.connections:
                    connection.close()

    def connection(self, name: str) -> ServerConnection | None:
        return next((c for c in self.connections if c.name == name), None)

    async def prepare_turn(self, wait_s: float | None = None) -> list[str]:
        """Wait (bounded) for servers still starting; the notices this turn should show."""
        await self.settled(wait_s)
        return self._notices()

    async def settled(self, wait_s: float | None = None) -> None:
        """Wait (bounded by ``wait_s``, default ``ready_wait_s``) until no server is still starting."""
        limit = self.ready_wait_s if wait_s is None else wait_s
        if self._running:
            with anyio.move_on_after(limit):
                while any(c.settling for c in self.connections):
                    await self._changed.wait()

    def _notices(self) -> list[str]:
        notices: list[str] = []
        for spec in self.unusable:
            if self._once(("unusable", spec.name)):
                notices.append(f"⚠ MCP server '{spec.name}' was not started: {spec.reason}.")
        for conn in self.connections:
            if conn.state == "failed" and self._once((conn.index, "failed", conn.attempts)):
                notices.append(
                    f"⚠ MCP server '{conn.name}' could not be started: {conn.error}. Its tools are not available."
                )
            elif conn.tools_cut and self._once((conn.index, "cut", conn.listing_version)):
                notices.append(
                    f"⚠ MCP server '{conn.name}' lists more than {MAX_MCP_TOOLS_PER_SERVER} tools; only the first"
                    f" {MAX_MCP_TOOLS_PER_SERVER} are offered to the model."
                )
            elif conn.settling and self._once((conn.index, "starting", conn.attempts)):
                notices.append(
                    f"⏳ MCP server '{conn.name}' is still starting; its tools will be offered once it is ready."
                )
        for text in notices:
            _log.info("MCP notice", notice=text)
        return notices

    def _once(self, key: tuple[object, ...]) -> bool:
        if key in self._reported:
            return False
        self._reported.add(key)
        return True

    def tools(self) -> list[AnyTool]:
        """The MCP tools to offer now, sorted by name (the same state always gives the same list)."""
        offered = [c for c in self.connections if c.offered]
        key = tuple((c.index, c.listing_version, c.has_resources, c.has_prompts) for c in offered)
        if key == self._cache_key:
            return self._cache
        entries: list[tuple[ToolKey, ServerConnection, Mapping[str, object] | Utility]] = []
        for conn in offered:
            seen: set[str] = set()
            for remote in conn.tools:
                name = remote.get("name")
                if isinstance(name, str) and name not in seen:
                    seen.add(name)
                    entries.append((ToolKey(conn.index, conn.name, name), conn, remote))
            for capability, helpers in UTILITY_TOOLS.items():
                if (capability == "resources" and conn.has_resources) or (capability == "prompts" and conn.has_prompts):
                    entries.extend((ToolKey(conn.index, conn.name, h, utility=True), conn, h) for h in helpers)
        names = assign_names([k for k, _, _ in entries])
        tools: list[AnyTool] = []
        for tool_key, conn, source in entries:
            if isinstance(source, str):
                tools.append(UtilityTool(names[tool_key], conn, source))
            else:
                tools.append(McpTool(names[tool_key], conn, source))
        tools.sort(key=lambda t: t.name)
        by_connection: dict[int, list[str]] = {}
        for tool_key, _, _ in entries:
            by_connection.setdefault(tool_key.server_index, []).append(names[tool_key])
        self._names = {index: tuple(sorted(found)) for index, found in by_connection.items()}
        self._cache_key, self._cache = key, tools
        return tools

    def status(self) -> list[ServerStatus]:
        """Every server of the session, in the editor's order, the unusable specs last."""
        self.tools()  # brings the offered names up to date
        statuses = [
            ServerStatus(
                name=conn.name,
                transport="stdio" if isinstance(conn.spec, StdioSpec) else conn.spec.transport,
                state=_STATES[conn.state],
                error=conn.error if conn.state in (LinkState.FAILED, LinkState.DOWN) else None,
                tools=self._names.get(conn.index, ()) if conn.offered else (),
            )
            for conn in self.connections
        ]
        statuses += [ServerStatus(spec.name, "-", "not started", spec.reason, ()) for spec in self.unusable]
        return statuses

    async def reconnect(self, name: str) -> None:
        """Drop the named server's connection and connect again (bounded); ``KeyError`` for an unknown name,
        ``NotConnected`` (saying why) when the new connection could not be made."""
        connection = self.connection(name)
        if connection is None:
            raise KeyError(name)
        await connection.link.reconnect()
