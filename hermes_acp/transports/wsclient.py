"""A WebSocket client in the standard library: what ``hermes-acp --connect`` speaks to a session host's remote door.

``open_link`` makes one connection (RFC 6455): TCP, TLS for ``wss://`` and ``https://`` (the system's roots, or the
file given with ``--cacert``; the host name checked), the HTTP/1.1 upgrade with ``Authorization: Bearer <token>``,
the server's ``Sec-WebSocket-Accept`` checked; every step bounded by ``timeout_s``. A refusal says why in words
(``LinkError``): the door refused the token (401) or the Host/Origin (403), the certificate did not verify, the host
could not be reached, it is no WebSocket door. ``Link`` sends text messages (masked, as a client must) and reads
whole messages (fragments joined, pings answered, a close answered and reported as the end).

Why not the ``websockets`` package (installed with the server): its synchronous client costs about 200 ms to import,
and the relay must start as fast as the local front door; the part of the protocol a client needs is small.
Standard library only (``ssl`` only for a TLS link); nothing of the server.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import socket
import struct
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["MAX_MESSAGE_BYTES", "Link", "LinkError", "Target", "open_link", "parse_target"]

MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""The longest message read from the host (a replay of a long session is one frame per update, never this)."""
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_TEXT, _BINARY, _CLOSE, _PING, _PONG, _CONTINUATION = 0x1, 0x2, 0x8, 0x9, 0xA, 0x0


class LinkError(Exception):
    """The link could not be made, or broke; the message says why in the user's words."""

    def __init__(self, message: str, *, fatal: bool = False):
        super().__init__(message)
        self.fatal = fatal
        """Trying again cannot help (the token, the certificate, not a door): reconnecting stops."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where the door is: ``wss://host:port/path`` (``https://`` names the same door: it takes an upgrade)."""

    url: str
    host: str
    port: int
    path: str
    tls: bool

    @property
    def authority(self) -> str:
        default = 443 if self.tls else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


def parse_target(url: str) -> Target:
    """``url`` as a door's address; ``ValueError`` naming what is wrong."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("ws", "wss", "http", "https"):
        raise ValueError(
            f"{url!r}: use a wss:// (or ws://, https://, http://) URL of the host's door, e.g. wss://host/acp"
        )
    if not parts.hostname:
        raise ValueError(f"{url!r}: the URL names no host")
    tls = scheme in ("wss", "https")
    try:
        port = parts.port or (443 if tls else 80)
    except ValueError as exc:
        raise ValueError(f"{url!r}: {exc}") from None
    path = parts.path or "/acp"
    if parts.query:
        path += "?" + parts.query
    return Target(url, parts.hostname, port, path, tls)


def open_link(target: Target, token: str | None, *, cafile: str | None, timeout_s: float) -> Link:
    """A WebSocket link to ``target`` (see the module docstring); ``LinkError`` saying why not."""
    try:
        raw = socket.create_connection((target.host, target.port), timeout=timeout_s)
    except socket.gaierror as exc:
        raise LinkError(f"cannot find the host {target.host!r}: {exc.strerror or exc}") from exc
    except TimeoutError as exc:
        raise LinkError(f"{target.authority} did not answer within {timeout_s:g} s") from exc
    except OSError as exc:
        raise LinkError(f"cannot reach {target.authority}: {exc.strerror or exc}") from exc
    sock: socket.socket = raw
    try:
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if target.tls:
            sock = _tls(raw, target, cafile)
        rest = _upgrade(sock, target, token)
    except BaseException:
        sock.close()
        raise
    sock.settimeout(None)
    return Link(sock, rest)


def _tls(raw: socket.socket, target: Target, cafile: str | None) -> socket.socket:
    import ssl

    try:
        context = ssl.create_default_context(cafile=cafile)
    except (OSError, ssl.SSLError) as exc:
        raise LinkError(f"cannot read the CA certificate {cafile!r}: {exc}", fatal=True) from exc
    try:
        return context.wrap_socket(raw, server_hostname=target.host)
    except ssl.SSLCertVerificationError as exc:
        hint = "; give its CA with --cacert" if cafile is None else f" against {cafile}"
        raise LinkError(
            f"the certificate of {target.authority} did not verify ({exc.verify_message or exc.reason}){hint}",
            fatal=True,
        ) from exc
    except ssl.SSLError as exc:
        raise LinkError(f"TLS with {target.authority} failed: {exc.reason or exc}", fatal=True) from exc
    except TimeoutError as exc:
        raise LinkError(f"TLS with {target.authority} did not finish in time") from exc
    except OSError as exc:
        raise LinkError(f"TLS with {target.authority} failed: {exc.strerror or exc}") from exc


def _upgrade(sock: socket.socket, target: Target, token: str | None) -> bytes:
    """The HTTP/1.1 upgrade; what the server sent past its answer's headers (the first frames, maybe)."""
    key = base64.b64encode(os.urandom(16)).decode("ascii")
    lines = [
        f"GET {target.path} HTTP/1.1",
        f"Host: {target.authority}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
        "User-Agent: hermes-acp-connect",
    ]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    try:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        head, rest = _read_head(sock)
    except TimeoutError as exc:
        raise LinkError(f"{target.authority} did not answer the WebSocket upgrade in time") from exc
    except OSError as exc:
        raise LinkError(f"{target.authority} closed the connection during the upgrade: {exc.strerror or exc}") from exc
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    fields = status_line.split(" ", 2)
    status = int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if status != 101:
        reason = _body(sock, headers, rest)
        if status == 401 or reason.startswith("Unauthorized"):
            why = (
                "no token was given (--token-file, or HERMES_ACP_TOKEN)" if not token else "the token is not the host's"
            )
            raise LinkError(f"{target.authority} refused the connection: {why} ({status})", fatal=True)
        if status == 403:
            raise LinkError(
                f"{target.authority} refused the connection ({status}: {reason or 'forbidden'}); a door behind a"
                " proxy takes the Host name only when [host] allowed_hosts on the host lists it",
                fatal=True,
            )
        raise LinkError(f"{target.url} is no hermes-acp door: it answered {status_line.strip()!r}", fatal=True)
    expected = base64.b64encode(hashlib.sha1(key.encode("ascii") + _GUID).digest()).decode("ascii")
    if headers.get("sec-websocket-accept") != expected:
        raise LinkError(f"{target.url} answered the upgrade wrongly (Sec-WebSocket-Accept)", fatal=True)
    return rest


def _body(sock: socket.socket, headers: dict[str, str], rest: bytes) -> str:
    """The short body of a refusal (the door says why in it); empty when there is none or it does not come."""
    length = headers.get("content-length", "")
    wanted = min(int(length), 4096) if length.isdigit() else 0
    data = rest[:wanted]
    try:
        while len(data) < wanted:
            chunk = sock.recv(wanted - len(data))
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    return data.decode("utf-8", "replace").strip()


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise OSError("the connection closed")
        data += chunk
        if len(data) > 64 * 1024:
            raise OSError("the answer's headers are too long")
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


class Link:
    """One WebSocket connection: ``send`` from any thread, ``receive`` from one."""

    def __init__(self, sock: socket.socket, buffered: bytes = b""):
        self._sock = sock
        self._buffer = bytearray(buffered)
        self._sending = threading.Lock()
        self._closed = False
        self.heard = time.monotonic()
        """When the host last sent anything (a pong too): a link silent for long is a link that dropped."""

    def send(self, text: str) -> None:
        """One text message; ``LinkError`` when the link broke."""
        self._frame(_TEXT, text.encode("utf-8"))

    def ping(self) -> None:
        self._frame(_PING, b"")

    def receive(self) -> str | None:
        """The next whole message, None once the host closed the link; ``LinkError`` when it broke."""
        parts: list[bytes] = []
        size = 0
        while True:
            opcode, fin, payload = self._read_frame()
            if opcode == _PING:
                self._frame(_PONG, payload)
                continue
            if opcode == _PONG:
                continue
            if opcode == _CLOSE:
                self._answer_close(payload)
                return None
            size += len(payload)
            if size > MAX_MESSAGE_BYTES:
                raise LinkError(f"the host sent a message over {MAX_MESSAGE_BYTES} bytes")
            parts.append(payload)
            if fin:
                return b"".join(parts).decode("utf-8", "replace")

    def close(self) -> None:
        """Say goodbye (a close frame, bounded) and close the socket; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self._sock.settimeout(1.0)
            self._frame(_CLOSE, struct.pack("!H", 1000), closing=True)
        except (OSError, LinkError):
            pass
        self.abort()

    def abort(self) -> None:
        """Close the socket at once (a reader blocked on it wakes with an error)."""
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()

    def _frame(self, opcode: int, payload: bytes, *, closing: bool = False) -> None:
        if self._closed and not closing:
            raise LinkError("the link is closed")
        mask = os.urandom(4)
        length = len(payload)
        if length < 126:
            header = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
        elif length < 1 << 16:
            header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
        try:
            with self._sending:
                self._sock.sendall(header + mask + _masked(payload, mask))
        except OSError as exc:
            raise LinkError(f"the link broke: {exc.strerror or exc}") from exc

    def _read_frame(self) -> tuple[int, bool, bytes]:
        first, second = self._read(2)
        self.heard = time.monotonic()
        length = second & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", self._read(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", self._read(8))
        if length > MAX_MESSAGE_BYTES:
            raise LinkError(f"the host sent a frame over {MAX_MESSAGE_BYTES} bytes")
        mask = self._read(4) if second & 0x80 else None
        payload = self._read(length)
        if mask is not None:
            payload = _masked(payload, mask)
        return first & 0x0F, bool(first & 0x80), payload

    def _read(self, count: int) -> bytes:
        while len(self._buffer) < count:
            try:
                chunk = self._sock.recv(max(65536, count - len(self._buffer)))
            except OSError as exc:
                raise LinkError(f"the link broke: {exc.strerror or exc}") from exc
            if not chunk:
                raise LinkError("the host closed the link")
            self._buffer += chunk
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        return data

    def _answer_close(self, payload: bytes) -> None:
        with contextlib.suppress(LinkError):
            self._frame(_CLOSE, payload[:2], closing=True)


def _masked(payload: bytes, mask: bytes) -> bytes:
    """``payload`` XOR the repeated 4-byte ``mask`` (whole-number arithmetic: no loop over bytes in Python)."""
    if not payload:
        return payload
    repeated = (mask * (len(payload) // 4 + 1))[: len(payload)]
    value = int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")
    return value.to_bytes(len(payload), "big")
