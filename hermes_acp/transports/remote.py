"""The remote door: the session host over WebSocket and Streamable HTTP, for a client on another machine.

Off by default; ``[host] listen = ["ws://127.0.0.1:8765"]`` turns it on (``ws://`` and ``http://`` name the same
door: one endpoint, ``/acp``, that takes both). The shapes are those of ACP's Streamable HTTP / WebSocket transport
as the TypeScript SDK 2.4.0 implements them (``AcpServer``, ``experimental/ws-client``, ``experimental/http-client``):

- **WebSocket**: ``GET /acp`` with an upgrade; the ``101`` answer carries ``Acp-Connection-Id``; then one JSON-RPC
  message per text frame, both ways.
- **Streamable HTTP**: ``POST /acp`` with ``initialize`` and no ``Acp-Connection-Id`` opens a connection; its answer
  is the ``initialize`` response, with the new ``Acp-Connection-Id``. Every later message is a ``POST`` with that
  header (and ``Acp-Session-Id`` for a session's messages, equal to ``params.sessionId``), answered ``202``; what
  the host sends comes back on server-sent events: ``GET`` with ``Accept: text/event-stream`` and the connection id
  is the connection's stream (responses to requests without a session, and ``session/load``'s), with
  ``Acp-Session-Id`` too a session's stream (its updates, its requests, the responses to its requests; buffered
  until the client opens it). ``DELETE`` ends the connection. A connection whose client has not held its
  connection stream for ``HTTP_ORPHAN_S`` is ended as if deleted.

Every request passes ``admission.Admission`` before any ACP frame is read: its ``Host`` must name this door (or
``[host] allowed_hosts``), an ``Origin`` it carries must be in ``[host] allowed_origins``, and it needs
``Authorization: Bearer <token>`` (``[host] token_file``, created ``0600`` on first use), compared in constant
time; otherwise ``403`` / ``401`` (a WebSocket upgrade ``403``). A ``POST`` body past ``[host] max_body_bytes`` is
refused ``413`` by its ``Content-Length`` before it is read, or as it streams past the bound; a WebSocket message
past it closes the connection with ``1009`` (uvicorn's ``ws_max_size``: the frame's header is enough). A bind
outside loopback is refused unless ``[host] allow_remote = true``; TLS belongs to a reverse proxy in front (README).
Each remote connection is a ``Connection`` like any other, with its own ``initialize`` and capabilities and the
host's own environment; the files and terminals it offers are on the client's machine, the commands the agent runs
itself are on the host's.

A link that drops is a client that left (invariant 24): the WebSocket's writer says ``ClientGone`` for whatever
Starlette or uvicorn raise when the socket closed or errored, and an HTTP connection that is deleted, orphaned, or
whose client stopped reading its streams says it from then on; either way the connection takes the dispatcher's
one leaving path, which in the host detaches it and leaves its turns running (``[host] on_leave``).

Served by uvicorn with Starlette (already installed with the MCP SDK) and ``websockets`` as uvicorn's WebSocket
implementation; none of it is imported unless a door is configured.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import stat
import uuid
from collections import deque
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import anyio
import uvicorn
from anyio.abc import TaskGroup
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from hermes_acp import anchored
from hermes_acp.config import Settings
from hermes_acp.errors import ConfigError
from hermes_acp.jsonrpc.link import ClientGone
from hermes_acp.protocol.connection import Connection, Serve
from hermes_acp.telemetry import get_logger

from .admission import Admission, DoorPolicy, is_loopback, read_body, too_large

__all__ = ["HTTP_ORPHAN_S", "RemoteDoors", "door_address", "load_token"]

_log = get_logger("hermes_acp.host")
CONNECTION_HEADER = "Acp-Connection-Id"
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


def door_address(door: str, *, allow_remote: bool) -> tuple[str, int]:
    """The host and port of a ``[host] listen`` entry; ``ConfigError`` for a bind outside loopback without
    ``allow_remote``."""
    parts = urlsplit(door)
    host, port = parts.hostname or "", parts.port or 0
    if not allow_remote and not is_loopback(host):
        raise ConfigError(
            f"[host] listen: {door!r} binds outside loopback; set [host] allow_remote = true to allow it"
            " (and put a TLS reverse proxy in front)"
        )
    return host, port


def load_token(settings: Settings) -> str:
    """The bearer token remote clients must send: read from ``[host] token_file`` (``Settings.host_token_file``,
    default ``$HERMES_ACP_HOME/host.token``), created with a random token and mode ``0600`` when missing (written
    whole through ``anchored``, never through a link)."""
    path = settings.host_token_file
    info = anchored.lstat(path.parent, path)
    if info is None:
        token = secrets.token_urlsafe(32)
        anchored.write_file(path.parent, path, (token + "\n").encode(), folders=anchored.PRIVATE_FOLDER)
        _log.info("created the remote door's token", path=str(path))
        return token
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{path}: the host's token file must be a regular file (it is a link or a folder)")
    if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
        anchored.set_mode(path.parent, path, anchored.PRIVATE_FILE)
    handle = anchored.open_read(path.parent, path)
    token = ""
    if handle is not None:
        with handle:
            token = handle.read().decode("utf-8", "replace").strip()
    if len(token) < 16:
        raise ConfigError(f"{path}: the host's token must be at least 16 characters")
    return token


class _Messages:
    """A ``FrameSource`` fed whole messages (a WebSocket's frames, HTTP bodies, each within ``[host] max_body_bytes``);
    None once closed."""

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[bytes](256)

    async def read(self) -> bytes | None:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return None

    async def put(self, data: bytes) -> None:
        await self._send.send(data)

    def close(self) -> None:
        self._send.close()


class _WebSocketWriter:
    """The dispatcher's ``Writer`` over a WebSocket: each frame one text message. A socket that closed, reset or
    errored under a send is ``ClientGone``, whichever of Starlette's or uvicorn's exceptions said it."""

    def __init__(self, websocket: WebSocket):
        self._websocket = websocket

    async def send(self, data: bytes) -> None:
        try:
            await self._websocket.send_text(data.decode("utf-8").rstrip("\n"))
        except (WebSocketDisconnect, OSError, RuntimeError) as exc:  # RuntimeError: Starlette's "already closed"
            raise ClientGone(f"the WebSocket closed: {type(exc).__name__} {exc}".rstrip()) from exc

    def close(self) -> None:
        return None


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

    def __init__(self, doors: RemoteDoors):
        self.id = str(uuid.uuid4())
        self._doors = doors
        self.messages = _Messages()
        self.connection = Connection(self.messages, self, doors.env, cancel_on_leave=False, name="http")
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
                await self._doors.serve(self.connection)
                group.cancel_scope.cancel()
        finally:
            self.end()
            self._doors.http.pop(self.id, None)

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


class RemoteDoors:
    """The WebSocket and Streamable HTTP door(s) of ``[host] listen``: ``serve`` gets each connection, made with the
    host's own environment ``env``."""

    def __init__(self, serve: Serve, env: Mapping[str, str], settings: Settings):
        self.serve = serve
        self.env = env
        self._settings = settings
        self.http: dict[str, _HttpConnection] = {}
        self._servers: list[_Server] = []
        self._group: TaskGroup | None = None
        self.listening: list[str] = []
        self.refused: list[str] = []

    async def start(self, group: TaskGroup) -> None:
        """Bind every configured door (one refused is logged and skipped); serve them in ``group``."""
        self._group = group
        settings = self._settings.host
        policy = DoorPolicy(
            load_token(self._settings).encode(),
            frozenset(settings.allowed_origins),
            frozenset(settings.allowed_hosts),
        )
        app = Starlette(
            routes=[
                Route("/acp", self._http, methods=["GET", "POST", "DELETE"]),
                WebSocketRoute("/acp", self._websocket),
            ]
        )
        for door in settings.listen:
            try:
                host, port = door_address(door, allow_remote=settings.allow_remote)
                sock = _bind(host, port)
            except (ConfigError, OSError) as exc:
                _log.error("a remote door was not opened", door=door, error=str(exc))
                self.refused.append(f"{door}: {exc}")
                continue
            if host in ("0.0.0.0", "::") and not settings.allowed_hosts:  # a bind to every address
                _log.warning(
                    "a door on every address admits only the Host names in [host] allowed_hosts, and none is listed",
                    door=door,
                )
            config = uvicorn.Config(
                Admission(app, policy, (host, int(sock.getsockname()[1]))),
                ws="websockets-sansio",
                ws_max_size=settings.max_body_bytes,
                lifespan="off",
                log_level="warning",
                access_log=False,
            )
            server = _Server(config)
            self._servers.append(server)
            group.start_soon(server.serve, [sock], name=f"remote door {door}")
            self.listening.append(door)
            _log.info("remote door listening", door=door)

    async def stop(self) -> None:
        for connection in list(self.http.values()):
            connection.end()
        for server in self._servers:
            server.should_exit = True

    # -- WebSocket ------------------------------------------------------------------------------------------

    async def _websocket(self, websocket: WebSocket) -> None:
        """One WebSocket connection (admitted already): its messages in, until the socket closes, errors, or a
        message past ``[host] max_body_bytes`` closes it (1009)."""
        connection_id = str(uuid.uuid4())
        await websocket.accept(headers=[(CONNECTION_HEADER.lower().encode(), connection_id.encode())])
        messages = _Messages()
        connection = Connection(messages, _WebSocketWriter(websocket), self.env, cancel_on_leave=False, name="ws")
        async with anyio.create_task_group() as group:
            group.start_soon(connection.dispatcher.run, name="ws connection dispatcher")
            group.start_soon(self.serve, connection, name="ws connection")
            try:
                while True:
                    message = await websocket.receive()
                    if message["type"] == "websocket.disconnect":
                        break
                    data = message.get("bytes")
                    await messages.put(data if data is not None else str(message.get("text", "")).encode())
            except (WebSocketDisconnect, RuntimeError):  # Starlette's words for a socket already closed
                pass
            finally:
                messages.close()
                connection.dispatcher.close_input()

    # -- Streamable HTTP ------------------------------------------------------------------------------------

    async def _http(self, request: Request) -> Response:
        if request.method == "POST":
            return await self._post(request)
        if request.method == "GET":
            return self._get(request)
        return self._delete(request)

    async def _post(self, request: Request) -> Response:
        if request.headers.get("content-type", "").split(";", 1)[0].strip().lower() != "application/json":
            return PlainTextResponse("Unsupported Media Type", status_code=415)
        limit = self._settings.host.max_body_bytes
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
        connection = self.http.get(connection_id)
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
        assert self._group is not None
        connection = _HttpConnection(self)
        connection.initialize_id = message["id"]
        self.http[connection.id] = connection
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
        connection = self.http.get(connection_id)
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
        connection = self.http.get(request.headers.get(CONNECTION_HEADER) or "")
        if connection is None:
            return PlainTextResponse(f"Unknown {CONNECTION_HEADER}", status_code=404)
        connection.end()
        return Response(status_code=202)


class _Server(uvicorn.Server):
    """uvicorn inside the host's event loop: the host owns the signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock
