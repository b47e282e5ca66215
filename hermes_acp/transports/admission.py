"""Who and what the remote door lets in: the one check of every WebSocket upgrade and HTTP request, and the bound on
an HTTP body.

``Admission`` wraps the door's ASGI app and runs before any route, so before any ACP frame is read:

- **Host.** The ``Host`` header must name the door's own address (its bound host and port; for a loopback door any
  loopback name, ``localhost``, ``127.0.0.1`` or ``[::1]``, with that port) or an entry of ``[host] allowed_hosts``
  (a proxy's public name; ``NAME`` for any port, ``NAME:PORT`` for that one). A page that rebinds its own DNS name
  to this machine sends its name, which is refused.
- **Origin.** A request that carries ``Origin`` (a browser does, for a page's fetch or WebSocket) is refused
  unless that origin is listed in ``[host] allowed_origins`` (none by default): a page in the user's browser cannot
  use the door, whatever it guesses. A client outside a browser sends none.
- **Token.** ``Authorization: Bearer <token>``, compared in constant time (``bearer_matches``: digests of both
  through ``hmac.compare_digest``, so neither the content nor the length of the token shows in the timing).

A refused HTTP request is answered ``403`` (Host, Origin) or ``401`` (token) and its link closed, so a body sent
with it is never read; a refused WebSocket upgrade ``403``, with the reason in the body where the server supports a
denial response. The token never reaches a log.

``read_body`` bounds a ``POST``'s body by ``[host] max_body_bytes``: refused by its ``Content-Length`` before a byte
of it is read, and cut as it streams past the bound (``None``: the caller answers ``413`` and the link closes, so
the rest is never read). WebSocket messages have the same bound in uvicorn's parser (``ws_max_size``: a frame
whose header says more is refused with close code 1009 before its payload is read). This module knows HTTP
headers, not ACP.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from hermes_acp.telemetry import get_logger

__all__ = ["Admission", "DoorPolicy", "bearer_matches", "is_loopback", "read_body", "too_large"]

_log = get_logger("hermes_acp.host")
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def bearer_matches(authorization: str, token: bytes) -> bool:
    """Whether an ``Authorization`` header carries ``token`` as a bearer token, compared in constant time: the
    SHA-256 digests of both go through ``hmac.compare_digest``, so the time taken says nothing of where the given
    token differs, nor of how long the real one is."""
    scheme, _, given = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return False
    offered = hashlib.sha256(given.strip().encode("utf-8", "surrogateescape")).digest()
    return hmac.compare_digest(offered, hashlib.sha256(token).digest())


@dataclass(frozen=True, slots=True)
class DoorPolicy:
    """Whom the doors admit: their token, and the origins and extra host names allowed."""

    token: bytes
    allowed_origins: frozenset[str] = frozenset()
    """Lowercase origins (``scheme://host[:port]``), as ``config.HostSettings`` writes them."""
    allowed_hosts: frozenset[str] = frozenset()
    """Lowercase ``name`` (any port) or ``name:port`` (``[v6]:port``), as ``config.HostSettings`` writes them."""


class Admission:
    """ASGI middleware: a request (HTTP or WebSocket) reaches the door's routes only if its Host, Origin and token
    pass; ``door`` is the host and port the door is bound to."""

    def __init__(self, app: ASGIApp, policy: DoorPolicy, door: tuple[str, int]):
        self._app = app
        self._policy = policy
        host, port = door
        host = host.lower().strip("[]")
        self._names = _LOOPBACK_NAMES if is_loopback(host) else frozenset({host})
        self._port = port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        refusal = self.refusal(Headers(scope=scope), websocket=scope["type"] == "websocket")
        if refusal is None:
            await self._app(scope, receive, send)
            return
        status, reason = refusal
        client = scope.get("client")
        _log.info("the remote door refused a request", reason=reason, client=client[0] if client else None)
        if scope["type"] == "http":  # the link closes after the answer: a body sent with the request is never read
            headers = {"Connection": "close", **({"WWW-Authenticate": "Bearer"} if status == 401 else {})}
            await PlainTextResponse(reason, status_code=status, headers=headers)(scope, receive, send)
            return
        websocket = WebSocket(scope, receive, send)
        if "websocket.http.response" in scope.get("extensions", {}):
            await websocket.send_denial_response(PlainTextResponse(reason, status_code=403))
        else:
            await websocket.close(code=1008)  # before accepting: the server answers the upgrade 403

    def refusal(self, headers: Headers, *, websocket: bool) -> tuple[int, str] | None:
        """Why a request with these headers is refused, as (HTTP status, reason); None when it is admitted."""
        if not self._host_allowed(headers.get("host", "")):
            return 403, "Forbidden: the Host header names neither this door nor a name in [host] allowed_hosts"
        origin = headers.get("origin")
        if origin is not None and origin.lower().rstrip("/") not in self._policy.allowed_origins:
            return 403, "Forbidden: this Origin is not in [host] allowed_origins"
        if not bearer_matches(headers.get("authorization", ""), self._policy.token):
            return (403 if websocket else 401), "Unauthorized: a valid bearer token is required"
        return None

    def _host_allowed(self, value: str) -> bool:
        try:
            parts = urlsplit(f"//{value}")
            name, port = (parts.hostname or ""), parts.port
        except ValueError:  # a port that is not a number, a bracket left open
            return False
        if not name or parts.path or parts.username is not None or parts.password is not None:
            return False
        if name in self._names and port == self._port:
            return True
        allowed = self._policy.allowed_hosts
        return name in allowed or (port is not None and f"{_bracketed(name)}:{port}" in allowed)


async def read_body(request: Request, limit: int) -> bytes | None:
    """The request's body, or None when it is larger than ``limit``: by its ``Content-Length`` before any of it is
    read, or as soon as what streamed in passes the bound (the rest is left unread). Never holds more than ``limit``
    and one chunk; a client that disconnects mid-body gets None too (nobody reads the answer)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                return None
    except ClientDisconnect:
        return None
    return bytes(body)


def too_large(limit: int) -> PlainTextResponse:
    """The ``413`` for a body past ``limit``; the link closes after it, so the rest of the body is never read."""
    return PlainTextResponse(
        f"Payload Too Large: the body is over [host] max_body_bytes ({limit} bytes)",
        status_code=413,
        headers={"Connection": "close"},
    )


def is_loopback(host: str) -> bool:
    """Whether a door's host is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bracketed(name: str) -> str:
    return f"[{name}]" if ":" in name else name
