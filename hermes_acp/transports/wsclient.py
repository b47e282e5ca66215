"""A WebSocket client in the standard library: what ``hermes-acp --connect`` speaks to a session host's remote door.

``open_link`` makes one connection (RFC 6455): TCP, TLS for ``wss://`` and ``https://`` (the system's roots, or the
file given with ``--cacert``; the host name checked), the HTTP/1.1 upgrade with ``Authorization: Bearer <token>``,
the server's ``Sec-WebSocket-Accept`` checked; every step bounded by ``timeout_s``. A refusal says why in words
(``LinkError``): the door refused the token (401) or the Host/Origin (403), the certificate did not verify, the host
could not be reached, it is no WebSocket door. ``Link`` sends text messages (masked, as a client must) and reads
whole messages (fragments joined, pings answered, a close answered and reported as the end).

Why not the ``websockets`` package (installed with the server): its synchronous client costs about 200 ms to import,
and the relay must start as fast as the local front door; the part of the protocol a client needs is small. A link
is read when ``select`` says so (``read``: one receive, every message it completed), so the relay needs no thread.
Standard library only, and of it no more than it needs (``ssl`` only for a TLS link; no ``urllib``, ``dataclasses``
or ``hashlib``, each of which costs milliseconds to load); nothing of the server.
"""

from __future__ import annotations

import binascii
import contextlib
import os
import socket
import time

try:  # CPython's own SHA-1 (one small module): hashlib would load OpenSSL, tens of ms of the relay's start-up
    from _sha1 import sha1  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - another Python
    from hashlib import sha1

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


class Target:
    """Where the door is: ``wss://host:port/path`` (``https://`` names the same door: it takes an upgrade)."""

    __slots__ = ("host", "path", "port", "tls", "url")

    def __init__(self, url: str, host: str, port: int, path: str, tls: bool):
        self.url, self.host, self.port, self.path, self.tls = url, host, port, path, tls

    @property
    def authority(self) -> str:
        default = 443 if self.tls else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


def parse_target(url: str) -> Target:
    """``url`` as a door's address; ``ValueError`` naming what is wrong."""
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("ws", "wss", "http", "https"):
        raise ValueError(
            f"{url!r}: use a wss:// (or ws://, https://, http://) URL of the host's door, e.g. wss://host/acp"
        )
    tls = scheme in ("wss", "https")
    authority, slash, path = rest.partition("/")
    path = "/" + path if slash else "/acp"
    authority = authority.rpartition("@")[2]  # no credentials in the URL: the token comes from its file
    if authority.startswith("["):
        host, _, after = authority[1:].partition("]")
        port_text = after.removeprefix(":")
    else:
        host, _, port_text = authority.partition(":")
    if not host:
        raise ValueError(f"{url!r}: the URL names no host")
    if port_text and not (port_text.isdigit() and 0 < int(port_text) < 65536):
        raise ValueError(f"{url!r}: {port_text!r} is no port")
    port = int(port_text) if port_text else (443 if tls else 80)
    return Target(url, host.lower(), port, path.partition("#")[0], tls)


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
    key = binascii.b2a_base64(os.urandom(16), newline=False).decode("ascii")
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
    expected = binascii.b2a_base64(sha1(key.encode("ascii") + _GUID).digest(), newline=False).decode("ascii")
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
    """One WebSocket connection, read when ``select`` says so: ``read`` takes what arrived and returns the messages
    it completed (pings answered on the way)."""

    def __init__(self, sock: socket.socket, buffered: bytes = b""):
        self._sock = sock
        self._buffer = bytearray(buffered)
        self._parts: list[bytes] = []
        self._closed = False
        self.heard = time.monotonic()
        """When the host last sent anything (a pong too): a link silent for long is a link that dropped."""

    def fileno(self) -> int:
        return self._sock.fileno()

    def buffered(self) -> bool:
        """Something is read already and not yet taken (TLS keeps decrypted bytes that ``select`` does not see)."""
        pending = getattr(self._sock, "pending", None)
        return bool(self._buffer) or (pending is not None and pending() > 0)

    def send(self, text: str) -> None:
        """One text message; ``LinkError`` when the link broke."""
        self._frame(_TEXT, text.encode("utf-8"))

    def ping(self) -> None:
        self._frame(_PING, b"")

    def read(self) -> list[str] | None:
        """One receive (call it when the socket is readable, or ``buffered``): the messages it completed; None
        once the host closed the link; ``LinkError`` when it broke."""
        try:
            chunk = self._sock.recv(1 << 16)
        except OSError as exc:
            raise LinkError(f"the link broke: {exc.strerror or exc}") from exc
        if not chunk:
            raise LinkError("the host closed the link")
        self._buffer += chunk
        self.heard = time.monotonic()
        messages: list[str] = []
        while (frame := self._next_frame()) is not None:
            opcode, fin, payload = frame
            if opcode == _PING:
                self._frame(_PONG, payload)
            elif opcode == _CLOSE:
                self._answer_close(payload)
                return messages or None
            elif opcode in (_TEXT, _BINARY, _CONTINUATION):
                self._parts.append(payload)
                if sum(len(part) for part in self._parts) > MAX_MESSAGE_BYTES:
                    raise LinkError(f"the host sent a message over {MAX_MESSAGE_BYTES} bytes")
                if fin:
                    messages.append(b"".join(self._parts).decode("utf-8", "replace"))
                    self._parts = []
        return messages

    def close(self) -> None:
        """Say goodbye (a close frame, bounded) and close the socket; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self._sock.settimeout(1.0)
            self._frame(_CLOSE, (1000).to_bytes(2, "big"), closing=True)
        except (OSError, LinkError):
            pass
        self.abort()

    def abort(self) -> None:
        """Close the socket at once."""
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
            header = bytes((0x80 | opcode, 0x80 | length))
        elif length < 1 << 16:
            header = bytes((0x80 | opcode, 0x80 | 126)) + length.to_bytes(2, "big")
        else:
            header = bytes((0x80 | opcode, 0x80 | 127)) + length.to_bytes(8, "big")
        try:
            self._sock.sendall(header + mask + _masked(payload, mask))
        except OSError as exc:
            raise LinkError(f"the link broke: {exc.strerror or exc}") from exc

    def _next_frame(self) -> tuple[int, bool, bytes] | None:
        """The first whole frame in the buffer, taken out of it; None until one is whole."""
        buffer = self._buffer
        if len(buffer) < 2:
            return None
        first, second = buffer[0], buffer[1]
        length, at = second & 0x7F, 2
        if length == 126:
            if len(buffer) < 4:
                return None
            length, at = int.from_bytes(buffer[2:4], "big"), 4
        elif length == 127:
            if len(buffer) < 10:
                return None
            length, at = int.from_bytes(buffer[2:10], "big"), 10
        if length > MAX_MESSAGE_BYTES:
            raise LinkError(f"the host sent a frame over {MAX_MESSAGE_BYTES} bytes")
        mask = None
        if second & 0x80:
            if len(buffer) < at + 4:
                return None
            mask, at = bytes(buffer[at : at + 4]), at + 4
        if len(buffer) < at + length:
            return None
        payload = bytes(buffer[at : at + length])
        del buffer[: at + length]
        if mask is not None:
            payload = _masked(payload, mask)
        return first & 0x0F, bool(first & 0x80), payload

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
