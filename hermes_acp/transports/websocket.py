"""The WebSocket transport: ``GET /acp`` with an upgrade; the ``101`` answer carries ``Acp-Connection-Id``; then one
JSON-RPC message per text frame, both ways (the shapes of ACP's WebSocket transport as the TypeScript SDK 2.4.0's
``experimental/ws-client`` speaks it).

The remote door (``remote``) admits the upgrade (``admission``) and routes it here. A message past ``[host]
max_body_bytes`` is refused by uvicorn's parser (``ws_max_size``: close code 1009). A link that drops is a client
that left (invariant 24): the writer says ``ClientGone`` for whatever Starlette or uvicorn raise when the socket
closed or errored, and the end of the socket's messages closes the connection's input; either way the connection
takes the dispatcher's one leaving path. Starlette is imported with the door, only when ``[host] listen`` names one.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

import anyio
from starlette.websockets import WebSocket, WebSocketDisconnect

from hermes_acp.jsonrpc.link import ClientGone
from hermes_acp.protocol.connection import Connection, Serve

from .messages import CONNECTION_HEADER, Messages

__all__ = ["WebSocketWriter", "serve_websocket"]


class WebSocketWriter:
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


async def serve_websocket(websocket: WebSocket, serve: Serve, env: Mapping[str, str]) -> None:
    """One WebSocket connection (admitted already): its messages in, until the socket closes, errors, or a
    message past ``[host] max_body_bytes`` closes it (1009)."""
    connection_id = str(uuid.uuid4())
    await websocket.accept(headers=[(CONNECTION_HEADER.lower().encode(), connection_id.encode())])
    messages = Messages()
    connection = Connection(messages, WebSocketWriter(websocket), env, cancel_on_leave=False, name="ws")
    async with anyio.create_task_group() as group:
        group.start_soon(connection.dispatcher.run, name="ws connection dispatcher")
        group.start_soon(serve, connection, name="ws connection")
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
