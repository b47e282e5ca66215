"""An HTTP ``POST`` written by hand on a plain socket, for what an HTTP library would not send: a head whose
``Content-Length`` has no body behind it, and a chunked body from a generator sent while the answer is read, as a
browser's ``fetch`` does (it stops sending when the answer comes). A plain non-blocking socket, because what it
received stays readable after the peer resets the link, where asyncio's and anyio's streams raise the reset first.
Used by the remote door's tests and its bench row; it knows HTTP/1.1 framing and nothing of ACP.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterable, Iterator

import anyio

__all__ = ["head_only", "post_streaming"]

WAIT_S = 30.0


@contextlib.contextmanager
def _socket(port: int) -> Iterator[socket.socket]:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setblocking(False)
    try:
        yield sock
    finally:
        sock.close()


async def _send(sock: socket.socket, data: bytes) -> None:
    view = memoryview(data)
    while view:
        await anyio.wait_writable(sock)
        with contextlib.suppress(BlockingIOError):
            view = view[sock.send(view) :]


async def _answer(sock: socket.socket) -> tuple[int, str]:
    """The answer's status and body (by its ``Content-Length``)."""
    received = b""
    while True:
        head, found, rest = received.partition(b"\r\n\r\n")
        if found:
            lines = head.decode("latin-1").lower().splitlines()
            lengths = [line.split(":", 1)[1] for line in lines if line.startswith("content-length:")]
            if len(rest) >= (length := int(lengths[0]) if lengths else 0):
                return int(lines[0].split(" ", 2)[1]), rest[:length].decode()
        await anyio.wait_readable(sock)
        with contextlib.suppress(BlockingIOError):
            data = sock.recv(65536)
            assert data, f"the host closed the link without an answer (after {received!r})"
            received += data


def _head(port: int, token: str, lines: Iterable[str]) -> bytes:
    fields = [f"Host: 127.0.0.1:{port}", f"Authorization: Bearer {token}", "Content-Type: application/json", *lines]
    return ("POST /acp HTTP/1.1\r\n" + "".join(f"{line}\r\n" for line in fields) + "\r\n").encode()


async def head_only(port: int, token: str, content_length: int) -> tuple[int, str]:
    """A ``POST`` whose head announces ``content_length`` bytes, none of which is ever sent: the answer."""
    with _socket(port) as sock, anyio.fail_after(WAIT_S):
        await _send(sock, _head(port, token, [f"Content-Length: {content_length}"]))
        return await _answer(sock)


async def post_streaming(port: int, token: str, chunks: Iterable[bytes]) -> tuple[int, str, int]:
    """A chunked ``POST`` of ``chunks``, sent while the answer is read; sending stops when the answer arrives (or the
    host closes the link). The answer's status and body, and how many body bytes were sent."""
    sent = 0
    with _socket(port) as sock, anyio.fail_after(WAIT_S):
        await _send(sock, _head(port, token, ["Transfer-Encoding: chunked"]))

        async def send() -> None:
            nonlocal sent
            with contextlib.suppress(OSError):  # the host reset the link: it has answered
                for chunk in chunks:
                    await _send(sock, f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    sent += len(chunk)
                await _send(sock, b"0\r\n\r\n")

        async with anyio.create_task_group() as group:
            group.start_soon(send)
            status, body = await _answer(sock)
            group.cancel_scope.cancel()
    return status, body, sent
