"""The adapter to the mcp SDK: open one server over stdio, streamable HTTP or SSE, and speak to it in plain dicts.

``open_wire(spec, ...)`` is an async context manager: it starts the transport (spawning a stdio server in the
session's cwd, its env merged over the SDK's minimal environment; HTTP and SSE with the editor's headers), runs the
``initialize`` handshake (``mode="legacy"``: one round trip every server understands) and yields a ``Wire``.
Results come back as wire-shaped dicts (by alias, JSON mode), so nothing above this module sees SDK types.
SDK and transport exceptions are translated here, once: a closed connection, a broken pipe, an HTTP transport
error become ``TransportDropped``; a JSON-RPC error or an unreadable answer becomes ``ServerRejected``.

The read stream is watched: when the server goes away between requests (a crashed stdio process, a closed SSE
stream), ``Wire.dropped`` is set, so the owner can rebuild the connection before the next call instead of
sending into a dead one. Timeouts are the caller's business (the connection bounds every wait); this module
only gives HTTP its connect timeout. It is imported lazily (importing the SDK costs over a second) and is the
only module of hermes_acp/mcp_client that imports ``mcp``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

import anyio
import httpx2
from mcp import Client, MCPError, types
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import ValidationError

from hermes_acp.version import __version__

from ._failures import ServerRejected, TransportDropped
from .specs import HttpSpec, StdioSpec

__all__ = ["MAX_LIST_PAGES", "Wire", "open_wire"]

MAX_LIST_PAGES = 50
"""Pages of a paginated list we follow before stopping (a server whose cursor never ends cannot hang us)."""
SSE_READ_TIMEOUT_S = 3600.0
"""How long an idle SSE stream may stay silent before the SDK gives it up (the next call then reconnects)."""
_CLIENT_INFO = types.Implementation(name="hermes-acp", version=__version__)


@dataclass
class Wire:
    """One live, initialized connection."""

    client: Client
    dropped: anyio.Event

    @property
    def has_resources(self) -> bool:
        return self.client.server_capabilities.resources is not None

    @property
    def has_prompts(self) -> bool:
        return self.client.server_capabilities.prompts is not None

    @property
    def server_label(self) -> str:
        info = self.client.server_info
        return f"{info.name} {info.version}".strip() if info is not None else "unknown server"

    async def list_tools(self) -> list[dict[str, Any]]:
        return [_dump(t) for t in await self._pages("tools")]

    async def list_resources(self) -> list[dict[str, Any]]:
        return [_dump(r) for r in await self._pages("resources")]

    async def list_prompts(self) -> list[dict[str, Any]]:
        return [_dump(p) for p in await self._pages("prompts")]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """``tools/call``; the raw result (no output-schema check: the server acted either way)."""
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments))
        with _translated():
            result = await self.client.session.send_request(request, types.CallToolResult)
        return _dump(result)

    async def read_resource(self, uri: str) -> dict[str, Any]:
        with _translated():
            result = await self.client.session.read_resource(uri)
        return _dump(result)

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> dict[str, Any]:
        with _translated():
            result = await self.client.session.get_prompt(name, arguments)
        return _dump(result)

    async def _pages(self, kind: str) -> list[Any]:
        session = self.client.session
        items: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor)
            with _translated():
                if kind == "tools":
                    page: Any = await session.list_tools(params=params)
                    items.extend(page.tools)
                elif kind == "resources":
                    page = await session.list_resources(params=params)
                    items.extend(page.resources)
                else:
                    page = await session.list_prompts(params=params)
                    items.extend(page.prompts)
            cursor = page.next_cursor
            if not cursor:
                break
        return items


def _dump(model: Any) -> dict[str, Any]:
    data: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return data


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    """The one place SDK and transport errors become ``TransportDropped`` / ``ServerRejected``."""
    try:
        yield
    except ExceptionGroup as group:
        leaf = _first_leaf(group)
        with _translated():
            raise leaf from group
    except MCPError as exc:
        if exc.code == types.CONNECTION_CLOSED:
            raise TransportDropped(exc.error.message or "connection closed") from exc
        raise ServerRejected(exc.error.message or f"error {exc.code}", code=exc.code) from exc
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream) as exc:
        raise TransportDropped("the connection to the server is closed") from exc
    except (OSError, httpx2.TransportError) as exc:
        raise TransportDropped(f"{type(exc).__name__}: {exc}") from exc
    except httpx2.HTTPStatusError as exc:
        raise ServerRejected(f"HTTP {exc.response.status_code}", code=exc.response.status_code) from exc
    except (ValidationError, RuntimeError, ValueError) as exc:
        raise ServerRejected(f"the server's answer could not be read: {exc}") from exc


def _first_leaf(group: BaseExceptionGroup[Exception]) -> Exception:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


class _WatchedReadStream:
    """Delegates to the transport's read stream and sets ``dropped`` when it ends (EOF or closed)."""

    def __init__(self, inner: Any, dropped: anyio.Event):
        self._inner = inner
        self._dropped = dropped

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._dropped.set()
            raise

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._dropped.set()
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedReadStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


@contextlib.asynccontextmanager
async def _transport(
    spec: StdioSpec | HttpSpec, *, cwd: Path, errlog: TextIO, connect_timeout_s: float, dropped: anyio.Event
) -> AsyncIterator[tuple[Any, Any]]:
    if isinstance(spec, StdioSpec):
        params = StdioServerParameters(command=spec.command, args=list(spec.args), env=dict(spec.env), cwd=cwd)
        async with stdio_client(params, errlog=errlog) as (read, write):
            yield _WatchedReadStream(read, dropped), write
    elif spec.transport == "http":
        timeout = httpx2.Timeout(connect_timeout_s, read=None)
        async with (
            create_mcp_http_client(headers=dict(spec.headers), timeout=timeout) as http,
            streamable_http_client(spec.url, http_client=http) as (read, write),
        ):
            yield _WatchedReadStream(read, dropped), write
    else:
        async with sse_client(
            spec.url, headers=dict(spec.headers), timeout=connect_timeout_s, sse_read_timeout=SSE_READ_TIMEOUT_S
        ) as (read, write):
            yield _WatchedReadStream(read, dropped), write


@contextlib.asynccontextmanager
async def open_wire(
    spec: StdioSpec | HttpSpec, *, cwd: Path, errlog: TextIO, connect_timeout_s: float, dropped: anyio.Event
) -> AsyncIterator[Wire]:
    """Connect and initialize; raises ``TransportDropped`` / ``ServerRejected`` when it cannot.

    ``dropped`` is set when the connection ends for any reason (the caller may set it too, to end it).
    """
    transport = _transport(spec, cwd=cwd, errlog=errlog, connect_timeout_s=connect_timeout_s, dropped=dropped)
    client = Client(transport, mode="legacy", cache=None, client_info=_CLIENT_INFO)
    async with contextlib.AsyncExitStack() as stack:
        with _translated():
            await stack.enter_async_context(client)
        yield Wire(client=client, dropped=dropped)
