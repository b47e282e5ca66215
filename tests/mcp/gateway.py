"""An HTTP gateway in front of a fixture MCP server, for the tests: it forwards every request and relays the answer,
except for the ``tools/call`` requests it was told to fail: those it forwards too (the server acts), then drops the
server's answer and replies with the given HTTP status instead, as a proxy that lost the upstream response does.
One request per connection (``connection: close``). Not a test module."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from urllib.parse import urlsplit

import anyio
import httpx2
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = ["Gateway", "gateway"]

_HOP_BY_HOP = frozenset({"host", "connection", "content-length", "transfer-encoding", "keep-alive"})


@dataclass
class Gateway:
    url: str
    failures: dict[str, list[int]]
    """Per tool name, the statuses to answer its next calls with (each used once), after forwarding them."""
    replaced: list[tuple[str, int]] = field(default_factory=list)
    """(tool, status) for every answer the gateway replaced."""


def _tool_called(body: bytes) -> str | None:
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if isinstance(message, dict) and message.get("method") == "tools/call":
        return str(message.get("params", {}).get("name"))
    return None


async def _relay(gw: Gateway, client: httpx2.AsyncClient, upstream: str, stream: SocketStream) -> None:
    reader = BufferedByteReceiveStream(stream)
    head = (await reader.receive_until(b"\r\n\r\n", 65536)).decode("latin-1").split("\r\n")
    method, target, _ = head[0].split(" ", 2)
    headers = [tuple(part.strip() for part in line.split(":", 1)) for line in head[1:] if ":" in line]
    length = next((int(value) for name, value in headers if name.lower() == "content-length"), 0)
    body = await reader.receive_exactly(length) if length else b""
    forwarded = [(name, value) for name, value in headers if name.lower() not in _HOP_BY_HOP]
    request = client.build_request(method, upstream + target, headers=forwarded, content=body)
    response = await client.send(request, stream=True)
    try:
        tool = _tool_called(body) if method == "POST" else None
        pending = gw.failures.get(tool or "")
        if pending:
            status = pending.pop(0)
            await response.aread()
            gw.replaced.append((str(tool), status))
            await stream.send(
                f"HTTP/1.1 {status} Gateway Failure\r\ncontent-type: text/plain\r\ncontent-length: 7\r\n"
                "connection: close\r\n\r\nfailure".encode("latin-1")
            )
            return
        lines = [f"HTTP/1.1 {response.status_code} {response.reason_phrase}"]
        lines += [f"{k}: {v}" for k, v in response.headers.multi_items() if k.lower() not in _HOP_BY_HOP]
        lines.append("connection: close")
        await stream.send(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        async for chunk in response.aiter_raw():
            await stream.send(chunk)
    finally:
        await response.aclose()


async def _serve_one(gw: Gateway, client: httpx2.AsyncClient, upstream: str, stream: SocketStream) -> None:
    async with stream:
        # The client hanging up (a closed SSE stream at shutdown) ends the exchange, nothing more.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.EndOfStream, anyio.IncompleteRead, httpx2.HTTPError):
            await _relay(gw, client, upstream, stream)


@contextlib.asynccontextmanager
async def gateway(upstream_url: str, failures: Mapping[str, list[int]]) -> AsyncIterator[Gateway]:
    parts = urlsplit(upstream_url)
    upstream = f"{parts.scheme}://{parts.netloc}"
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(SocketAttribute.local_port)
    gw = Gateway(url=f"http://127.0.0.1:{port}{parts.path}", failures={k: list(v) for k, v in failures.items()})
    async with (
        listener,
        httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=None)) as client,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(listener.serve, partial(_serve_one, gw, client, upstream))
        try:
            yield gw
        finally:
            tg.cancel_scope.cancel()
