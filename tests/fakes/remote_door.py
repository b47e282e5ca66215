"""Clients of a session host's remote door for tests, in raw JSON-RPC frames.

``ws_peer`` (the ``websockets`` client) and ``http_peer`` (Streamable HTTP with httpx: ``POST``s, and server-sent
events on ``GET``) give one interface, ``Peer``: ``request`` (the answer's result; an error answer fails the test),
the ``session/update``s received, ``wait_for``, and ``drop()``: the link goes away without a word (no close frame,
no ``DELETE``), as a network that fails does. Every frame both ways is kept in a ``FrameLog`` for the schema check.

A request written by hand (a ``Content-Length`` with no body, 200 MB sent while the answer is read) is
``probes/http_upload.py``'s, shared with the bench.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
from anyio.abc import TaskGroup
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from .acp_schema import FrameLog

__all__ = ["Peer", "http_peer", "ws_peer"]

WAIT_S = 30.0
INITIALIZE = {
    "protocolVersion": 1,
    "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
    "clientInfo": {"name": "hermes-acp-remote-test", "version": "1.0.0"},
}


@dataclass
class Peer:
    """One remote connection: what it received, and how to send."""

    frames: FrameLog = field(default_factory=FrameLog)
    answers: dict[Any, dict[str, Any]] = field(default_factory=dict)
    updates: list[dict[str, Any]] = field(default_factory=list)
    """The params of every ``session/update`` received, in order."""
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def received(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            self.answers[message.get("id")] = message
        elif message["method"] == "session/update":
            self.updates.append(message["params"])
        self.frames.add("to_client", message)

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = WAIT_S) -> None:
        await self.frames.wait_for(predicate, timeout)

    async def request(self, method: str, params: dict[str, Any], *, session: str | None = None) -> Any:
        request_id = await self.start_request(method, params, session=session)
        await self.wait_for(lambda: request_id in self.answers)
        answer = self.answers[request_id]
        assert "error" not in answer, answer
        return answer["result"]

    async def start_request(self, method: str, params: dict[str, Any], *, session: str | None = None) -> int:
        """Send a request without waiting for its answer; its id."""
        request_id = next(self._ids)
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.frames.add("to_agent", frame)
        await self.send(frame, session)
        return request_id

    def text(self, session: str, kind: str = "agent_message_chunk") -> str:
        return "".join(
            u["update"]["content"]["text"]
            for u in self.updates
            if u["sessionId"] == session and u["update"]["sessionUpdate"] == kind
        )

    async def send(self, frame: dict[str, Any], session: str | None) -> None:
        raise NotImplementedError

    async def watch(self, session: str) -> None:
        """Open the session's stream where the transport has one (Streamable HTTP)."""

    async def drop(self) -> None:
        raise NotImplementedError


class _WsPeer(Peer):
    def __init__(self, websocket: ClientConnection, sock: socket.socket):
        super().__init__()
        self._websocket = websocket
        self._sock = sock
        self.close_code: int | None = None
        """The code of the host's close frame, once the connection has ended."""
        self.ended = anyio.Event()

    async def send(self, frame: dict[str, Any], session: str | None) -> None:
        await self._websocket.send(json.dumps(frame))

    async def send_raw(self, data: bytes) -> None:
        """Bytes on the socket as they are (a frame written by hand)."""
        self._websocket.transport.write(data)

    async def send_text(self, text: str) -> None:
        await self._websocket.send(text)

    async def read(self) -> None:
        try:
            async for message in self._websocket:
                self.received(json.loads(message))
        except ConnectionClosed as closed:
            self.close_code = closed.rcvd.code if closed.rcvd is not None else None
        finally:
            self.ended.set()

    async def drop(self) -> None:
        """The TCP link ends under the WebSocket: no close frame."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)


@contextlib.asynccontextmanager
async def ws_peer(
    port: int, token: str, *, host: str = "127.0.0.1", headers: Mapping[str, str] | None = None
) -> AsyncIterator[_WsPeer]:
    """A WebSocket connection to ``ws://127.0.0.1:port/acp`` (``host`` in the URL and its Host header), initialized."""
    sock = socket.create_connection(("127.0.0.1", port))
    extra = {"Authorization": f"Bearer {token}", **(headers or {})}
    async with connect(
        f"ws://{host}:{port}/acp", sock=sock, additional_headers=extra, max_size=None, close_timeout=1
    ) as websocket:
        peer = _WsPeer(websocket, sock)
        async with anyio.create_task_group() as group:
            group.start_soon(peer.read)
            await peer.request("initialize", INITIALIZE)
            try:
                yield peer
            finally:
                group.cancel_scope.cancel()


class _HttpPeer(Peer):
    def __init__(self, client: httpx.AsyncClient, url: str, group: TaskGroup):
        super().__init__()
        self._client = client
        self._url = url
        self._group = group
        self.connection = ""
        self._streams: list[anyio.CancelScope] = []

    async def initialize(self, headers: Mapping[str, str]) -> None:
        frame = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE}
        self.frames.add("to_agent", frame)
        answer = await self._client.post(self._url, json=frame, headers=headers)
        assert answer.status_code == 200, (answer.status_code, answer.text)
        self.connection = answer.headers["acp-connection-id"]
        self.received(answer.json())
        self._group.start_soon(self._stream, None)

    async def _stream(self, session: str | None) -> None:
        headers = {"Accept": "text/event-stream", "Acp-Connection-Id": self.connection}
        if session is not None:
            headers["Acp-Session-Id"] = session
        with anyio.CancelScope() as scope:
            self._streams.append(scope)
            async with self._client.stream("GET", self._url, headers=headers) as response:
                assert response.status_code == 200, response.status_code
                async for line in response.aiter_lines():
                    if line.startswith("data: "):
                        self.received(json.loads(line.removeprefix("data: ")))

    async def watch(self, session: str) -> None:
        self._group.start_soon(self._stream, session)

    async def send(self, frame: dict[str, Any], session: str | None) -> None:
        headers = {"Acp-Connection-Id": self.connection}
        if session is not None:
            headers["Acp-Session-Id"] = session
        answer = await self._client.post(self._url, json=frame, headers=headers)
        assert answer.status_code == 202, (answer.status_code, answer.text)

    async def drop(self) -> None:
        """Every stream ends and the client goes, without a ``DELETE``."""
        for scope in self._streams:
            scope.cancel()
        await self._client.aclose()


@contextlib.asynccontextmanager
async def http_peer(port: int, token: str) -> AsyncIterator[_HttpPeer]:
    """A Streamable HTTP connection to ``http://127.0.0.1:port/acp``, initialized, its connection stream open."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=headers, timeout=WAIT_S) as client, anyio.create_task_group() as group:
        peer = _HttpPeer(client, f"http://127.0.0.1:{port}/acp", group)
        await peer.initialize(headers)
        try:
            yield peer
        finally:
            group.cancel_scope.cancel()
