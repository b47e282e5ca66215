"""The remote door: the session host over WebSocket and Streamable HTTP, for a client on another machine.

Off by default; ``[host] listen = ["ws://127.0.0.1:8765"]`` turns it on (``ws://`` and ``http://`` name the same
door: one endpoint, ``/acp``, that takes both: an upgrade goes to ``websocket``, every other request to ``http``).
The shapes are those of ACP's Streamable HTTP / WebSocket transport as the TypeScript SDK 2.4.0 implements them
(``AcpServer``, ``experimental/ws-client``, ``experimental/http-client``).

Every request passes ``admission.Admission`` before any ACP frame is read: its ``Host`` must name this door (or
``[host] allowed_hosts``), an ``Origin`` it carries must be in ``[host] allowed_origins``, and it needs
``Authorization: Bearer <token>`` (``[host] token_file``, created ``0600`` on first use: ``load_token``), compared
in constant time; otherwise ``403`` / ``401`` (a WebSocket upgrade ``403``). A ``POST`` body past ``[host]
max_body_bytes`` is refused ``413`` by its ``Content-Length`` before it is read, or as it streams past the bound; a
WebSocket message past it closes the connection with ``1009`` (uvicorn's ``ws_max_size``: the frame's header is
enough). A bind outside loopback is refused unless ``[host] allow_remote = true``; TLS belongs to a reverse proxy in
front (README). Each remote connection is a ``Connection`` like any other, handed to ``serve``, with its own
``initialize`` and capabilities and the host's own environment; the files and terminals it offers are on the
client's machine, the commands the agent runs itself are on the host's.

Served by uvicorn with Starlette (already installed with the MCP SDK) and ``websockets`` as uvicorn's WebSocket
implementation; none of it is imported unless a door is configured.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import stat
from collections.abc import Iterator, Mapping
from urllib.parse import urlsplit

import uvicorn
from anyio.abc import TaskGroup
from starlette.applications import Starlette
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from hermes_acp import anchored
from hermes_acp.config import Settings
from hermes_acp.errors import ConfigError
from hermes_acp.platform import peers
from hermes_acp.protocol.connection import Serve
from hermes_acp.telemetry import get_logger

from .admission import Admission, DoorPolicy, is_loopback
from .http import HttpDoor
from .websocket import serve_websocket

__all__ = ["RemoteDoors", "door_address", "load_token"]

_log = get_logger("hermes_acp.host")


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
    if peers.owned_by_me(info) and stat.S_IMODE(info.st_mode) & 0o077:
        anchored.set_mode(path.parent, path, anchored.PRIVATE_FILE)
    handle = anchored.open_read(path.parent, path)
    token = ""
    if handle is not None:
        with handle:
            token = handle.read().decode("utf-8", "replace").strip()
    if len(token) < 16:
        raise ConfigError(f"{path}: the host's token must be at least 16 characters")
    return token


class RemoteDoors:
    """The WebSocket and Streamable HTTP door(s) of ``[host] listen``: ``serve`` gets each connection, made with the
    host's own environment ``env``."""

    def __init__(self, serve: Serve, env: Mapping[str, str], settings: Settings):
        self.serve = serve
        self.env = env
        self._settings = settings
        self._http: HttpDoor | None = None
        self._servers: list[_Server] = []
        self.listening: list[str] = []
        self.refused: list[str] = []

    async def start(self, group: TaskGroup) -> None:
        """Bind every configured door (one refused is logged and skipped); serve them in ``group``."""
        settings = self._settings.host
        http = self._http = HttpDoor(self.serve, self.env, settings.max_body_bytes, group)
        policy = DoorPolicy(
            load_token(self._settings).encode(),
            frozenset(settings.allowed_origins),
            frozenset(settings.allowed_hosts),
        )
        app = Starlette(
            routes=[
                Route("/acp", http.handle, methods=["GET", "POST", "DELETE"]),
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
        if self._http is not None:
            self._http.end_all()
        for server in self._servers:
            server.should_exit = True

    async def _websocket(self, websocket: WebSocket) -> None:
        await serve_websocket(websocket, self.serve, self.env)


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
