"""``Connection``: one client of the server — framing, the dispatcher and the handshake over any transport.

stdio (inline mode), a session host's Unix socket, a WebSocket and a Streamable HTTP connection are each one
``Connection``: frames come from a ``FrameSource`` (``jsonrpc.framing.LineReader`` over a byte stream, or a
transport that delivers whole messages) and go to a ``Writer`` (``jsonrpc.link``: its adapter says ``ClientGone``
for a link that dropped, whatever the transport); the dispatcher answers our exceptions with ACP's error codes
(``errors.acp_error``). ``initialize`` is routed from the start (``Handshake``); ``install`` puts the agent's other
routes on it once the app has loaded, with the client bridge that makes this connection's capabilities and
environment known to the sessions it opens. A transport hands each connection to a ``Serve`` callable (the app's),
which installs the routes and waits until the client has gone (``finished``). Leaving is one path whatever the
transport (``Dispatcher``): in inline mode it cancels the turns at once (``cancel_on_leave``); a session host
detaches the connection instead and its turns go on (``[host] on_leave``). It imports neither pydantic nor the rest of
the server until ``install`` is called.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from hermes_acp.jsonrpc.dispatcher import Dispatcher, FrameSource
from hermes_acp.jsonrpc.framing import LineReader
from hermes_acp.jsonrpc.link import Writer

from .errors import acp_error
from .initialize import Handshake

if TYPE_CHECKING:
    from hermes_acp.errors import HermesError
    from hermes_acp.sessions import SessionManager, SessionServices

    from .client_bridge import AcpClientBridge

__all__ = ["Connection", "Serve"]


class Connection:
    def __init__(
        self,
        source: FrameSource | LineReader,
        writer: Writer,
        env: Mapping[str, str],
        *,
        cancel_on_leave: bool = True,
        name: str = "stdio",
    ):
        self.env = env
        """The environment the client gave: its keys and variables apply to the sessions it opens."""
        self.name = name
        self.dispatcher = Dispatcher(source, writer, cancel_on_leave=cancel_on_leave, errors=acp_error)
        self.handshake = Handshake(env)
        self.dispatcher.add_routes([self.handshake.route])
        self.bridge: AcpClientBridge | None = None

    def install(
        self,
        manager: SessionManager | None,
        services: SessionServices | None,
        *,
        startup_error: HermesError | None = None,
    ) -> AcpClientBridge:
        """Route every ACP method to an agent on ``manager`` (or, when the server cannot serve sessions, to one
        that answers each with ``startup_error``)."""
        from .agent import HermesAgent
        from .client_bridge import AcpClientBridge

        self.bridge = AcpClientBridge(self.dispatcher, self.handshake, services, name=self.name)
        agent = HermesAgent(manager, self.bridge, startup_error=startup_error)
        self.dispatcher.add_routes(agent.routes(), complete=True)
        return self.bridge

    async def finished(self) -> None:
        """Until the client has gone and the requests in flight have ended."""
        await self.dispatcher.finished.wait()


Serve = Callable[[Connection], Coroutine[Any, Any, None]]
"""What a transport hands every connection it makes: puts the server's routes on it and serves it until its client
has gone (the session host's ``App.serve``; inline mode's ``app.run_connection``, which then shuts the server down).
A transport knows this callable, never the app."""
