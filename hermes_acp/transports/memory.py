"""An in-process link: two ends, each a ``FrameSource`` and a ``Writer``, joined by a pair of memory streams.

``hermes-acp exec`` runs the server and an ACP client of its own in one process: the server's ``Connection`` reads
and writes one end, the client's dispatcher the other, and every message between them is an encoded JSON-RPC frame,
as on stdio (the same dispatcher, routes and session code an editor meets; nothing is handed across as an object).
Closing an end (``close``) is its side leaving: the other end reads EOF, and a write to a closed end is
``ClientGone``. Each direction holds at most ``MAX_FRAMES`` frames; a writer past that waits for the reader, as a
pipe's would. Knows frames as bytes, nothing of JSON-RPC or ACP.
"""

from __future__ import annotations

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from hermes_acp.jsonrpc.link import ClientGone

__all__ = ["MAX_FRAMES", "MemoryEnd", "memory_link"]

MAX_FRAMES = 1024
"""Frames one direction holds before its writer waits."""


class MemoryEnd:
    """One end of the link: reads what the other end sends; sends to it."""

    def __init__(self, send: MemoryObjectSendStream[bytes], receive: MemoryObjectReceiveStream[bytes]):
        self._send = send
        self._receive = receive

    async def read(self) -> bytes | None:
        """The next frame, or None once the other end has closed (or this one did)."""
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return None

    async def send(self, data: bytes) -> None:
        try:
            await self._send.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise ClientGone("the other end of the in-process link is closed") from exc

    def close(self) -> None:
        """Leave: the other end reads EOF; what it sends from now on is ``ClientGone``."""
        self._send.close()
        self._receive.close()


def memory_link(max_frames: int = MAX_FRAMES) -> tuple[MemoryEnd, MemoryEnd]:
    """Two joined ends: what one sends, the other reads."""
    to_b, from_a = anyio.create_memory_object_stream[bytes](max_frames)
    to_a, from_b = anyio.create_memory_object_stream[bytes](max_frames)
    return MemoryEnd(to_b, from_b), MemoryEnd(to_a, from_a)
