"""An MCP server in memory, behind the seam the supervised connection opens (``mcp_client.wire_port``).

``MemoryMcpServer`` plays ``fixtures.mcp_server``'s tools that matter for at-most-once, with the same names,
annotations (``readOnlyHint``), schemas and result shapes: ``echo`` and ``flaky_lookup`` are read-only, ``add_note``,
``sleep`` and ``crash`` mutate. Each ``open_wire`` is a new "process" (a start is counted) and each call is journaled
before it runs, so tests read what really happened from the server, never from the answers. A hang never answers
(the caller's timeout ends it); a crash is what a dying process does to its connection: ``dropped`` is set and the
call raises ``TransportDropped``; ``kill()`` drops the live connection between calls. No process, no SDK, no sleep:
the suite's timeouts can then be short values (``McpTimeouts``) instead of real seconds.

Real transports (stdio, streamable HTTP, SSE through the mcp SDK) are tested against the real fixture server in
``tests/mcp/test_connections.py`` and ``test_transports.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio

from hermes_acp.mcp_client import HttpSpec, StdioSpec, TransportDropped
from hermes_acp.mcp_client.wire_port import McpWire, ProgressFn, WireHooks

__all__ = ["MemoryMcpServer"]

_READ_ONLY = {"readOnlyHint": True}
_MUTATING = {"readOnlyHint": False, "destructiveHint": False}


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str], hints: dict[str, Any]) -> Any:
    schema = {"type": "object", "properties": properties, "required": required}
    return {"name": name, "description": description, "inputSchema": schema, "annotations": hints}


TOOLS = [
    _tool("echo", "Return the text unchanged.", {"text": {"type": "string"}}, ["text"], _READ_ONLY),
    _tool("add_note", "Save a note (a side effect: every call counts).", {"text": {"type": "string"}}, ["text"],
          _MUTATING),
    _tool("sleep", "Wait, then answer (a mutating tool that can hang).", {"seconds": {"type": "number"}}, ["seconds"],
          _MUTATING),
    _tool("crash", "Exit the server process at once, in the middle of this call.", {"code": {"type": "integer"}}, [],
          _MUTATING),
    _tool(
        "flaky_lookup",
        "Look a key up; the first `fail_first` calls for a key crash (or hang) the server.",
        {"key": {"type": "string"}, "fail_first": {"type": "integer"}, "how": {"enum": ["crash", "hang"]}},
        ["key"],
        _READ_ONLY,
    ),
]  # fmt: skip


@dataclass
class MemoryMcpServer:
    calls: list[dict[str, Any]] = field(default_factory=list)
    """Every call that reached the server, in order: ``{"tool", "arguments", "connection"}``."""
    starts: int = 0
    _live: _MemoryWire | None = None

    def count(self, *tools: str) -> int:
        return len([c for c in self.calls if c["tool"] in tools])

    def kill(self) -> None:
        """The server process dies between calls: its connection ends."""
        if self._live is not None:
            self._live.crash()

    @contextlib.asynccontextmanager
    async def open_wire(
        self,
        spec: StdioSpec | HttpSpec,
        *,
        cwd: Path | None,
        errlog: TextIO,
        connect_timeout_s: float,
        dropped: anyio.Event,
        hooks: WireHooks | None = None,
    ) -> AsyncIterator[McpWire]:
        """An ``OpenWire``: a new server "process" and its initialized connection."""
        self.starts += 1
        wire = _MemoryWire(self, self.starts, dropped)
        self._live = wire
        try:
            yield wire
        finally:
            wire.crash()
            if self._live is wire:
                self._live = None


class _MemoryWire:
    def __init__(self, server: MemoryMcpServer, connection: int, dropped: anyio.Event):
        self._server = server
        self._connection = connection
        self._dropped = dropped
        self.has_resources = False
        self.has_prompts = False
        self.server_version = "memory"

    @property
    def dropped(self) -> anyio.Event:
        return self._dropped

    def crash(self) -> None:
        self._dropped.set()

    async def list_tools(self, *, limit: int | None = None) -> list[dict[str, Any]]:
        self._alive()
        return [dict(tool) for tool in TOOLS][:limit]

    async def list_resources(self) -> list[dict[str, Any]]:
        return []

    async def list_prompts(self) -> list[dict[str, Any]]:
        return []

    async def roots_changed(self) -> None:
        self._alive()

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, on_progress: ProgressFn | None = None
    ) -> dict[str, Any]:
        self._alive()
        self._server.calls.append({"tool": name, "arguments": dict(arguments), "connection": self._connection})
        if name == "echo":
            return _text(str(arguments["text"]))
        if name == "add_note":
            return _text(f"note #{self._server.count('add_note')} saved: {arguments['text']}")
        if name == "sleep":
            await anyio.sleep_forever()
        if name == "crash":
            self._die()
        if name == "flaky_lookup":
            key = arguments["key"]
            seen = len([c for c in self._server.calls if c["tool"] == name and c["arguments"]["key"] == key])
            if seen <= int(arguments.get("fail_first", 1)):
                if arguments.get("how", "crash") == "crash":
                    self._die()
                await anyio.sleep_forever()
            return _text(f"{key}: found")
        return {"content": [{"type": "text", "text": f"Unknown tool: {name}"}], "isError": True}

    async def read_resource(self, uri: str) -> dict[str, Any]:
        raise TransportDropped("no resources here")

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> dict[str, Any]:
        raise TransportDropped("no prompts here")

    def _alive(self) -> None:
        if self._dropped.is_set():
            raise TransportDropped("the connection is closed")

    def _die(self) -> None:
        self.crash()
        raise TransportDropped("the server process exited")


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}
