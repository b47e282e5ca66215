"""The session layer's view of the ACP client: update sink, permission gate, editor files and terminals.

``AcpClientBridge`` implements ``hermes_acp.sessions.ClientBridge`` over the agent-side connection. Updates are
awaited in order (no fire-and-forget); a closed connection is tolerated (the update is dropped and logged, the turn
still settles and stores everything). Permission answers map to our four outcomes; an unknown option id counts as
a refusal.
"""

from __future__ import annotations

import structlog
from acp import schema
from acp.agent.connection import AgentSideConnection

from hermes_acp.core import SessionEvent
from hermes_acp.tools.context import EditorFiles, EditorTerminals
from hermes_acp.turns.ports import LiveUpdate, PermissionAnswer, PermissionQuestion

from .convert import SessionUpdate, event_updates, live_update, tool_content, tool_locations
from .editor import AcpEditorFiles, AcpEditorTerminals

__all__ = ["AcpClientBridge", "AcpPermissionGate", "AcpUpdateSink"]

_log = structlog.get_logger("hermes_acp.protocol")
_OPTION_NAMES: dict[PermissionAnswer, str] = {
    "allow_once": "Allow once",
    "allow_always": "Always allow",
    "reject_once": "Reject",
    "reject_always": "Always reject",
}


class AcpUpdateSink:
    def __init__(self, conn: AgentSideConnection, session_id: str):
        self._conn = conn
        self._session_id = session_id

    async def emit_event(self, event: SessionEvent, *, live: bool) -> None:
        for update in event_updates(event, live=live):
            await self._send(update)

    async def emit_live(self, update: LiveUpdate) -> None:
        await self._send(live_update(update))

    async def _send(
        self,
        update: SessionUpdate | schema.CurrentModeUpdate | schema.ConfigOptionUpdate | schema.AvailableCommandsUpdate,
    ) -> None:
        try:
            await self._conn.session_update(session_id=self._session_id, update=update)
        except ConnectionError:
            _log.warning("client connection closed; update dropped", session_id=self._session_id)


class AcpPermissionGate:
    def __init__(self, conn: AgentSideConnection, session_id: str):
        self._conn = conn
        self._session_id = session_id

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
        answers: list[PermissionAnswer] = ["allow_once", "reject_once"]
        if question.offer_always:
            answers = ["allow_once", "allow_always", "reject_once", "reject_always"]
        options = [schema.PermissionOption(option_id=a, name=_OPTION_NAMES[a], kind=a) for a in answers]
        tool_call = schema.ToolCallUpdate(
            tool_call_id=question.tool_call_id,
            title=question.title,
            kind=question.kind,
            status="pending",
            raw_input=question.raw_input,
            content=tool_content(question.content) or None,
            locations=tool_locations(question.locations),
        )
        try:
            response = await self._conn.request_permission(
                session_id=self._session_id, tool_call=tool_call, options=options
            )
        except ConnectionError:
            return "cancelled"
        outcome = response.outcome
        if isinstance(outcome, schema.DeniedOutcome):
            return "cancelled"
        chosen = outcome.option_id
        for answer in answers:
            if chosen == answer:
                return answer
        _log.warning("permission answer with an option we did not offer", option=chosen, session_id=self._session_id)
        return "reject_once"


class AcpClientBridge:
    """Per connection: builds each session's sink and gate; offers fs/terminals when the client advertised them."""

    def __init__(self, conn: AgentSideConnection):
        self._conn = conn
        self.capabilities: schema.ClientCapabilities = schema.ClientCapabilities()

    def sink(self, session_id: str) -> AcpUpdateSink:
        return AcpUpdateSink(self._conn, session_id)

    def gate(self, session_id: str) -> AcpPermissionGate:
        return AcpPermissionGate(self._conn, session_id)

    def files(self, session_id: str) -> EditorFiles | None:
        """The client's ``fs/*`` when it advertised either method (the other one then runs on the local disk)."""
        fs = self.capabilities.fs
        can_read = bool(fs and fs.read_text_file)
        can_write = bool(fs and fs.write_text_file)
        if not (can_read or can_write):
            return None
        return AcpEditorFiles(self._conn, session_id, can_read=can_read, can_write=can_write)

    def terminals(self, session_id: str) -> EditorTerminals | None:
        """The client's ``terminal/*`` when it advertised ``terminal``."""
        return AcpEditorTerminals(self._conn, session_id) if self.capabilities.terminal else None

    async def send(
        self,
        session_id: str,
        update: SessionUpdate | schema.CurrentModeUpdate | schema.ConfigOptionUpdate | schema.AvailableCommandsUpdate,
    ) -> None:
        """A session-level update outside any turn (mode, config options, commands)."""
        await AcpUpdateSink(self._conn, session_id)._send(update)
