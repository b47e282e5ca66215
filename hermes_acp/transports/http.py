"""The Streamable HTTP transport: the shapes of ACP's Streamable HTTP transport as the TypeScript SDK 2.4.0's
``experimental/http-client`` speaks it.

``POST /acp`` with ``initialize`` and no ``Acp-Connection-Id`` opens a connection; its answer is the ``initialize``
response, with the new ``Acp-Connection-Id``. Every later message is a ``POST`` with that header (and
``Acp-Session-Id`` for a session's messages, equal to ``params.sessionId``), answered ``202``; what the host sends
comes back on server-sent events: ``GET`` with ``Accept: text/event-stream`` and the connection id is the
connection's stream (responses to requests without a session, and ``session/load``'s), with ``Acp-Session-Id`` too
a session's stream (its updates, its requests, the responses to its requests; buffered until the client opens it).
``DELETE`` ends the connection. A connection whose client has not held its connection stream for ``HTTP_ORPHAN_S``
is ended as if deleted.

The remote door (``remote``) admits each request (``admission``) and routes it here; a ``POST`` body past ``[host]
max_body_bytes`` is refused ``413`` (``admission.read_body``). A link that drops is a client that left (invariant
24): a connection that is deleted, orphaned, or whose client stopped reading its streams says ``ClientGone`` from
then on, and takes the dispatcher's one leaving path. Starlette is imported with the door, only when ``[host]
listen`` names one.
"""

from __future__ import annotations

import json
import uuid
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
from anyio.abc import TaskGroup
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from hermes_acp.jsonrpc.link import ClientGone
from hermes_acp.protocol.connection import Connection, Serve
from hermes_acp.telemetry import get_logger

from .admission import read_body, too_large
from .messages import CONNECTION_HEADER, Messages

__all__ = ["HTTP_ORPHAN_S", "HttpDoor"]

_log = get_logger("hermes_acp.host")
SESSION_HEADER = "Acp-Session-Id"
HTTP_ORPHAN_S = 60.0
"""An HTTP connection whose connection stream nobody holds for this long is ended."""
MAX_BUFFERED_BYTES = 64 * 1024 * 1024
"""What one HTTP connection may hold for streams nobody reads; past it the connection is ended."""
SESSION_SCOPED = frozenset(
    {
        "session/cancel",
        "session/close",
        "session/delete",
        "session/fork",
        "session/load",
        "session/prompt",
        "session/resume",
        "session/set_config_option",
        "session/set_mode",
        "session/set_model",
    }
)
"""Methods the transport routes by session (``Acp-Session-Id`` required), as the SDK's transport does."""


class _Mailbox:
    """One server-sent-event stream: messages wait here until its (one) receiver takes them."""

    def __init__(self, owner: _HttpConnection):
        self._owner = owner
        self.queue: deque[str] = deque()
        self.held = False
        self.closed = False
        self._wake = anyio.Event()

    def push(self, text: str) -> None:
        self.queue.append(text)
        self._owner.buffered += len(text)
        self._wake.set()

    def close(self) -> None:
        self.closed = True
        self._wake.set()

    async def events(self) -> AsyncIterator[str]:
        try:
            while True:
                while self.queue:
                    text = self.queue.popleft()
                    self._owner.buffered -= len(text)
                    yield f"data: {text}\n\n"
                if self.closed:
                    return
                await self._wake.wait()
                self._wake = anyio.Event()
        finally:
            self.held = False
            self._owner.holders_changed()


class _HttpConnection:
    """One Streamable HTTP connection: the routing of what the host sends to its streams (the dispatcher's
    ``Writer``), and what came in through ``POST``s (its ``FrameSource``)."""

    def __init__(self, door: HttpDoor):
        self.id = str(uuid.uuid4())
        self._door = door
        self.messages = Messages()
        self.connection = Connection(self.messages, self, door.env, cancel_on_leave=False, name="http")
        self.stream = _Mailbox(self)
        self.sessions: dict[str, _Mailbox] = {}
        self.routes: dict[str, str | None] = {}
        """A request of the client's (by id) → the session stream its response goes to (None: the connection's)."""
        self.buffered = 0
        self.initialize_id: Any = None
        self.initialized = anyio.Event()
        self.initialize_response: dict[str, Any] | None = None
        self._holders = anyio.Event()
        """Set (and replaced) whenever a stream gains or loses its receiver."""
        self.ended = anyio.Event()

    # -- the dispatcher's Writer ------------------------------------------------------------------------------

    async def send(self, data: bytes) -> None:
        """Route one frame to its stream; ``ClientGone`` once the connection was ended (deleted, orphaned) or its
        client stopped reading its streams."""
        if self.ended.is_set():
            raise ClientGone("the HTTP connection was ended")
        text = data.decode("utf-8").rstrip("\n")
        message = json.loads(text)
        if self.initialize_response is None and "method" not in message and message.get("id") == self.initialize_id:
            self.initialize_response = message
            self.initialized.set()
            return
        if "method" not in message:
            session = self.routes.pop(_key(message.get("id")), None)
        else:
            params = message.get("params")
            session = params.get("sessionId") if isinstance(params, dict) else None
        mailbox = self.stream if not isinstance(session, str) else self.session(session)
        mailbox.push(text)
        if self.buffered > MAX_BUFFERED_BYTES:
            _log.warning("an HTTP client is not reading its streams; its connection is ended", connection=self.id)
            self.end()
            raise ClientGone("the HTTP client stopped reading its streams")

    def close(self) -> None:
        self.end()

    # -- streams ----------------------------------------------------------------------------------------------

    def session(self, session_id: str) -> _Mailbox:
        mailbox = self.sessions.get(session_id)
        if mailbox is None:
            mailbox = self.sessions[session_id] = _Mailbox(self)
        return mailbox

    def holders_changed(self) -> None:
        self._holders.set()
        self._holders = anyio.Event()

    def end(self) -> None:
        if self.ended.is_set():
            return
        self.ended.set()
        self.messages.close()
        self.connection.dispatcher.close_input()
        self.stream.close()
        for mailbox in self.sessions.values():
            mailbox.close()

    async def run(self) -> None:
        """The connection's life in the host: served until the client deletes it, or leaves it orphaned."""
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self.connection.dispatcher.run, name="http connection dispatcher")
                group.start_soon(self._watch_orphan, name="http connection orphan timer")
                await self._door.serve(self.connection)
                group.cancel_scope.cancel()
        finally:
            self.end()
            self._door.connections.pop(self.id, None)

    async def _watch_orphan(self) -> None:
        """End the connection once nobody has held its connection stream for ``HTTP_ORPHAN_S``."""
        while not self.ended.is_set():
            change = self._holders
            if self.stream.held:
                await change.wait()
                continue
            with anyio.move_on_after(HTTP_ORPHAN_S) as waiting:
                await change.wait()
            if waiting.cancelled_caught:
                _log.info("an HTTP connection's client went away; ending it", connection=self.id)
                self.end()
                return


def _key(request_id: object) -> str:
    return json.dumps(request_id)


class HttpDoor:
    """The Streamable HTTP connections of the remote door: ``serve`` gets each, made with the host's own environment
    ``env``; each runs in ``group``."""

    def __init__(self, serve: Serve, env: Mapping[str, str], max_body_bytes: int, group: TaskGroup):
        self.serve = serve
        self.env = env
        self._max_body_bytes = max_body_bytes
        self._group = group
        self.connections: dict[str, _HttpConnection] = {}

    def end_all(self) -> None:
        for connection in list(self.connections.values()):
            connection.end()

    async def handle(self, request: Request) -> Response:
        """One request on ``/acp`` (admitted already): ``POST``, ``GET`` or ``DELETE``."""
        if request.method == "POST":
            return await self._post(request)
        if request.method == "GET":
            return self._get(request)
        return self._delete(request)

    async def _post(self, request: Request) -> Response:
        if request.headers.get("content-type", "").split(";", 1)[0].strip().lower() != "application/json":
            return PlainTextResponse("Unsupported Media Type", status_code=415)
        limit = self._max_body_bytes
        body = await read_body(request, limit)
        if body is None:
            return too_large(limit)
        try:
            message = json.loads(body)
        except ValueError:
            return PlainTextResponse("Invalid JSON", status_code=400)
        if isinstance(message, list):
            error = {"code": -32600, "message": "Invalid request: JSON-RPC batches are not supported"}
            return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=400)
        if not isinstance(message, dict):
            return PlainTextResponse("Invalid JSON-RPC message", status_code=400)
        connection_id = request.headers.get(CONNECTION_HEADER)
        if message.get("method") == "initialize" and "id" in message:
            if connection_id:
                return PlainTextResponse("Initialize not allowed on existing connection", status_code=400)
            return await self._initialize(message, body)
        if not connection_id:
            return PlainTextResponse(f"Missing {CONNECTION_HEADER}", status_code=400)
        connection = self.connections.get(connection_id)
        if connection is None or connection.ended.is_set():
            return PlainTextResponse(f"Unknown {CONNECTION_HEADER}", status_code=404)
        if "method" in message:
            header = request.headers.get(SESSION_HEADER)
            params = message.get("params")
            in_params = params.get("sessionId") if isinstance(params, dict) else None
            scoped = message["method"] in SESSION_SCOPED or in_params is not None
            if scoped and not header:
                return PlainTextResponse(f"Missing {SESSION_HEADER}", status_code=400)
            if header and in_params is not None and header != in_params:
                return PlainTextResponse(f"Mismatched {SESSION_HEADER}", status_code=400)
            if "id" in message:
                route = None if message["method"] == "session/load" else header
                connection.routes[_key(message["id"])] = route
        await connection.messages.put(body)
        return Response(status_code=202)

    async def _initialize(self, message: dict[str, Any], body: bytes) -> Response:
        connection = _HttpConnection(self)
        connection.initialize_id = message["id"]
        self.connections[connection.id] = connection
        self._group.start_soon(connection.run, name=f"http connection {connection.id}")
        await connection.messages.put(body)
        with anyio.move_on_after(30):
            await connection.initialized.wait()
        if connection.initialize_response is None:
            connection.end()
            return PlainTextResponse("Initialize failed", status_code=500)
        return JSONResponse(connection.initialize_response, headers={CONNECTION_HEADER: connection.id})

    def _get(self, request: Request) -> Response:
        if "text/event-stream" not in request.headers.get("accept", "").lower():
            return PlainTextResponse("Not Acceptable", status_code=406)
        connection_id = request.headers.get(CONNECTION_HEADER)
        if not connection_id:
            return PlainTextResponse(f"Missing {CONNECTION_HEADER}", status_code=400)
        connection = self.connections.get(connection_id)
        if connection is None or connection.ended.is_set():
            return PlainTextResponse(f"Unknown {CONNECTION_HEADER}", status_code=404)
        session_id = request.headers.get(SESSION_HEADER)
        mailbox = connection.session(session_id) if session_id else connection.stream
        if mailbox.held:
            return PlainTextResponse("Outbound stream already has an active receiver", status_code=409)
        mailbox.held = True
        connection.holders_changed()
        headers = {"Cache-Control": "no-cache", "Connection": "keep-alive"}
        return StreamingResponse(mailbox.events(), media_type="text/event-stream", headers=headers)

    def _delete(self, request: Request) -> Response:
        connection = self.connections.get(request.headers.get(CONNECTION_HEADER) or "")
        if connection is None:
            return PlainTextResponse(f"Unknown {CONNECTION_HEADER}", status_code=404)
        connection.end()
        return Response(status_code=202)
