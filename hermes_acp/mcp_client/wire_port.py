"""The seam under the supervised connection: one live, initialized MCP connection (``McpWire``) and how one is
opened from a spec (``OpenWire``).

``_wire`` is the adapter that implements both over the mcp SDK (stdio, streamable HTTP, SSE); a test double can
implement them in memory (``SupervisedConnection`` and ``McpServers`` take an ``open_wire``). Results and lists are
wire-shaped dicts; a broken transport raises ``TransportDropped``, an error answer ``ServerRejected``; ``dropped``
is set when the connection ends for any reason. This module imports nothing of the SDK.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Protocol, TextIO

import anyio

from .specs import HttpSpec, StdioSpec

__all__ = ["McpWire", "OpenWire"]


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

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]: ...

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
    ) -> AbstractAsyncContextManager[McpWire]:
        """Connect and initialize; raises ``TransportDropped`` / ``ServerRejected`` when it cannot."""
        ...
