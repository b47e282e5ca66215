"""The link to one client, as the dispatcher writes to it: the ``Writer`` port, and ``ClientGone``, the one meaning
of "the client left".

Every transport hands the dispatcher a ``Writer``. ``send`` delivers one encoded frame or raises ``ClientGone``:
the peer closed its end, reset or dropped the link, or the transport was closed under us. Each adapter translates
its own library's disconnect errors into ``ClientGone`` where it meets them (asyncio's ``OSError`` and
``RuntimeError`` on a pipe or a socket here; Starlette's ``WebSocketDisconnect`` in ``transports/websocket.py``, an
ended Streamable HTTP connection in ``transports/http.py``), so the dispatcher knows that one exception and no
transport's: a link that drops is a client that left, on every transport (invariant 24). Anything else a writer
raises is a bug, not a departure. The dispatcher adds the one case no writer can see: a client that stops reading
(``WRITE_TIMEOUT_S``).

``LineWriter`` is the adapter over an asyncio byte stream (stdio's pipe, the session host's Unix socket). This
module knows bytes and links; nothing of JSON-RPC.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol

__all__ = ["ClientGone", "LineWriter", "Writer"]


class ClientGone(ConnectionError):
    """The client's end of the link is gone (closed, reset, dropped, or no longer reading): the client left.

    A ``ConnectionError``, so whoever waits on the client (a permission question, an update) sees it as one."""


class Writer(Protocol):
    """What the dispatcher writes frames to; each transport has its adapter."""

    async def send(self, data: bytes) -> None:
        """Deliver one encoded frame (bytes ending in a newline); ``ClientGone`` when the client's end is gone."""
        ...

    def close(self) -> None:
        """Close our end; never raises."""
        ...


class LineWriter:
    """The ``Writer`` over an asyncio byte stream: frames as newline-terminated lines."""

    def __init__(self, stream: asyncio.StreamWriter):
        self._stream = stream

    async def send(self, data: bytes) -> None:
        try:
            self._stream.write(data)
            await self._stream.drain()
        except (OSError, RuntimeError) as exc:  # EPIPE, a reset socket, a transport closed under us
            raise ClientGone(f"the client's end of the stream is closed: {exc}") from exc

    def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError):
            self._stream.close()
