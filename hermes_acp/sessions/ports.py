"""What the session layer needs from the client connection, as one port.

``ClientBridge`` hands each session its update sink, its permission gate, and the editor's file system, terminals
and questions to the user when the client advertised them; and takes the session's slash commands and options
when they change. ``hermes_acp.protocol`` implements it over ACP; tests use doubles.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from hermes_acp.tools.context import EditorFiles, EditorTerminals, Elicitor
from hermes_acp.turns.ports import PermissionGate, UpdateSink

from .commands import Command

if TYPE_CHECKING:
    from .session import Session

__all__ = ["ClientBridge"]


class ClientBridge(Protocol):
    def sink(self, session_id: str) -> UpdateSink: ...

    def gate(self, session_id: str) -> PermissionGate: ...

    def files(self, session_id: str) -> EditorFiles | None: ...

    def terminals(self, session_id: str) -> EditorTerminals | None: ...

    def elicitor(self, session_id: str) -> Elicitor | None: ...

    async def commands_changed(self, session_id: str, commands: Sequence[Command]) -> None:
        """Tell the editor the session's slash commands are now ``commands``."""
        ...

    async def config_changed(self, session: Session, *, mode_changed: bool) -> None:
        """Tell the editor the session's options changed (its mode too, when ``mode_changed``)."""
        ...
