"""``Connection``: one client of the server — framing, the dispatcher and the handshake over any transport.

stdio (inline mode), a session host's Unix socket, a WebSocket and a Streamable HTTP connection are each one
``Connection``: frames come from a ``FrameSource`` (``jsonrpc.framing.LineReader`` over a byte stream, or a
transport that delivers whole messages) and go to a ``Writer`` (``jsonrpc.link``: its adapter says ``ClientGone``
for a link that dropped, whatever the transport); the dispatcher answers our exceptions with ACP's error codes
(``errors.acp_error``). ``initialize`` is routed from the start (``Handshake``: the connection's ACP version is
chosen there); ``install`` puts the other routes on it once the app has loaded, per (version, method)
(``routes.VersionedRoutes``: the v1 agent's and the v2 agent's handlers), with the client bridge that makes this
connection's version, capabilities and environment known to the sessions it opens, and the app's server epoch and
operation ledger (one per app: the same for every connection to a host). A transport hands each connection to a
``Serve`` callable (the app's), which installs the routes and waits until the client has gone (``finished``).
Leaving is one path whatever the transport (``Dispatcher``): in inline mode it cancels the turns at once
(``cancel_on_leave``); a session host detaches the connection instead and its turns go on (``[host] on_leave``). It
imports neither pydantic nor the rest of the server until ``install`` is called.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from hermes_acp.jsonrpc.dispatcher import Dispatcher, FrameSource
from hermes_acp.jsonrpc.framing import LineReader
from hermes_acp.jsonrpc.link import Writer

from .errors import acp_error
from .handshake import Handshake

if TYPE_CHECKING:
    from hermes_acp.errors import HermesError
    from hermes_acp.sessions import SessionManager, SessionServices

    from .client_bridge import AcpClientBridge
    from .reliable.epoch import Epoch
    from .reliable.operations import OperationLedger

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
        epoch: Epoch | None = None,
        ledger: OperationLedger | None = None,
    ) -> AcpClientBridge:
        """Route every ACP method of both versions to an agent on ``manager`` (or, when the server cannot serve
        sessions, to one that answers each with ``startup_error``); ``epoch`` and ``ledger`` are the app's."""
        from .agent import HermesAgent
        from .client_bridge import AcpClientBridge
        from .routes import VersionedRoutes
        from .v2.agent import V2Agent

        handshake = self.handshake
        if epoch is not None:
            handshake.adopt(epoch)
        bridge = self.bridge = AcpClientBridge(self.dispatcher, handshake, services, name=self.name, ledger=ledger)

        tables = {
            1: HermesAgent(manager, bridge, startup_error=startup_error).routes(),
            2: V2Agent(manager, bridge, startup_error=startup_error).routes(),
        }
        spawn = manager.background if manager is not None else None
        routes = VersionedRoutes(handshake, tables, ledger=ledger, scope=lambda: bridge.operation_scope, spawn=spawn)
        self.dispatcher.add_routes(routes.routes(), complete=True)
        return bridge

    async def finished(self) -> None:
        """Until the client has gone and the requests in flight have ended."""
        await self.dispatcher.finished.wait()


Serve = Callable[[Connection], Coroutine[Any, Any, None]]
"""What a transport hands every connection it makes: puts the server's routes on it and serves it until its client
has gone (the session host's ``App.serve``; inline mode's ``app.run_connection``, which then shuts the server down).
A transport knows this callable, never the app."""
