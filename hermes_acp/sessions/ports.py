"""What the session layer needs from a client connection, as one port.

``ClientBridge`` is one connection as a session sees it: the services its environment gives (keys, settings, the
environment commands inherit), whether it is still there, and per session its update sink, its permission gate,
and the editor's file system, terminals and questions to the user when the client advertised them; and how it
shows the session's commands and options when they change (each connection as its capabilities allow). A session
is attached to several at once (``sessions.audience``). ``hermes_acp.protocol`` implements it over ACP; tests use
doubles.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from hermes_acp.commands.command_set import Command
from hermes_acp.tools.context import EditorFiles, EditorTerminals, Elicitor
from hermes_acp.turns.ports import PermissionGate, UpdateSink

from .services import SessionServices

if TYPE_CHECKING:
    from .options import SessionOptions

__all__ = ["ClientBridge"]


class ClientBridge(Protocol):
    @property
    def connection_id(self) -> str:
        """Names the connection in logs and in ``session/list``'s ``_meta``."""
        ...

    @property
    def services(self) -> SessionServices:
        """What sessions this connection opens run with (its environment's keys and variables)."""
        ...

    @property
    def present(self) -> bool:
        """False once the client has gone."""
        ...

    @property
    def subagents(self) -> bool:
        """The client shows child sessions (their updates and questions under the child's id); one that does not
        gets nothing of them but progress lines and questions on the parent's ``delegate`` card."""
        ...

    def sink(self, session_id: str) -> UpdateSink: ...

    def gate(self, session_id: str) -> PermissionGate:
        """Its ``ask`` raises ``ConnectionError`` when the client goes away before answering."""
        ...

    def files(self, session_id: str) -> EditorFiles | None: ...

    def terminals(self, session_id: str) -> EditorTerminals | None: ...

    def elicitor(self, session_id: str) -> Elicitor | None: ...

    async def send(self, session_id: str, update: dict[str, Any]) -> None:
        """A session-level update the protocol layer rendered (mode, config options), passed on as it is."""
        ...

    async def commands_changed(self, session_id: str, commands: Sequence[Command]) -> None:
        """Tell the editor the session's slash commands are now ``commands``."""
        ...

    async def config_changed(self, session_id: str, options: SessionOptions, *, mode_changed: bool) -> None:
        """Tell the editor the session's options changed (its mode too, when ``mode_changed``)."""
        ...
