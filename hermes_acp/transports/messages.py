"""What the WebSocket and Streamable HTTP transports share: ``Messages``, the ``FrameSource`` of a transport that
delivers JSON-RPC messages whole, and the header that names a remote connection. It knows neither library.
"""

from __future__ import annotations

import anyio

__all__ = ["CONNECTION_HEADER", "Messages"]

CONNECTION_HEADER = "Acp-Connection-Id"


class Messages:
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
