"""The session layer's view of the ACP client: update sink, notices, permission gate, editor files, terminals and
questions to the user.

``AcpClientBridge`` implements ``hermes_acp.sessions.ClientBridge`` over one connection's dispatcher: one per
connection, carrying the services that connection's environment gives. Updates are awaited in order (no
fire-and-forget); a closed connection is tolerated (the update is dropped and logged, the turn still settles and
stores everything). What the client advertised in ``initialize`` (``capabilities``) decides what is offered to it:
its file system and terminals (not its terminals when it renders agent-owned ones), terminal cards for the
commands the agent runs itself, ``notice`` updates instead of agent text, compaction updates instead of an agent
message saying what was compacted, the ``ask_user`` tool, and addresses to open (URL elicitation: an MCP server's
sign-in page or its questions).

Permission answers map to our four outcomes; an unknown option id counts as a refusal, and a client that answers
with a JSON-RPC error refuses that call with its reason (the turn goes on). A client that goes away before it
answers raises ``ConnectionError``: another attached connection may still answer (``sessions.audience``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import structlog

from hermes_acp.commands.command_set import Command
from hermes_acp.core import SessionEvent
from hermes_acp.core.notice import Notice
from hermes_acp.errors import InvalidParamsError, PermissionDeniedError
from hermes_acp.jsonrpc.boundary import ClientRequestError
from hermes_acp.jsonrpc.dispatcher import Dispatcher
from hermes_acp.sessions.options import SessionOptions
from hermes_acp.sessions.switches import SWITCHES, Switch
from hermes_acp.sessions.views import EditorLinks
from hermes_acp.tools.context import EditorFiles, EditorTerminals, Elicitor
from hermes_acp.turns.ports import LiveUpdate, PermissionAnswer, PermissionChoice, PermissionQuestion

from .convert import event_updates, live_update, notice_update, tool_content, tool_locations
from .editor import AcpEditorFiles, AcpEditorTerminals, AcpElicitor, AcpLinks
from .initialize import Handshake
from .session_view import commands_update, config_options, session_view
from .terminal_cards import card_title
from .wire import ClientCapabilities, InitializeParams, PermissionResult, SelectedOutcome, parse

if TYPE_CHECKING:
    from hermes_acp.sessions import SessionServices

__all__ = ["AcpClientBridge", "AcpPermissionGate", "AcpUpdateSink"]

_log = structlog.get_logger("hermes_acp.protocol")
_OPTION_NAMES: dict[PermissionAnswer, str] = {
    "allow_once": "Allow once",
    "allow_always": "Always allow",
    "reject_once": "Reject",
    "reject_always": "Always reject",
}
_CONNECTION_NUMBERS = itertools.count(1)


class AcpUpdateSink:
    def __init__(self, bridge: AcpClientBridge, session_id: str):
        self._bridge = bridge
        self._session_id = session_id

    async def emit_event(self, event: SessionEvent, *, live: bool) -> None:
        capabilities = self._bridge.capabilities
        for update in event_updates(
            event,
            live=live,
            compaction=capabilities.compaction,
            plans=capabilities.plans,
            terminal_cards=capabilities.terminal_cards,
            subagents=capabilities.subagents,
            terminal_delta=capabilities.terminal_delta,
        ):
            await self.send(update)

    async def emit_live(self, update: LiveUpdate) -> None:
        capabilities = self._bridge.capabilities
        rendered = live_update(
            update,
            compaction=capabilities.compaction,
            terminal_cards=capabilities.terminal_cards,
            subagents=capabilities.subagents,
            terminal_delta=capabilities.terminal_delta,
        )
        if rendered is not None:
            await self.send(rendered)

    async def notice(self, notice: Notice) -> bool:
        if not self._bridge.capabilities.notices:
            return False
        await self.send(notice_update(notice))
        return True

    async def send(self, update: dict[str, Any]) -> None:
        try:
            await self._bridge.dispatcher.notify("session/update", {"sessionId": self._session_id, "update": update})
        except ConnectionError:
            _log.info("client connection closed; update dropped", session_id=self._session_id)


class AcpPermissionGate:
    def __init__(self, dispatcher: Dispatcher, session_id: str, *, terminal_cards: bool = False):
        self._dispatcher = dispatcher
        self._session_id = session_id
        self._terminal_cards = terminal_cards

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
        answers: list[PermissionAnswer] = ["allow_once", "reject_once"]
        if question.offer_always:
            answers = ["allow_once", "allow_always", "reject_once", "reject_always"]
        choices = [PermissionChoice(a, _OPTION_NAMES[a], a) for a in answers if a != "cancelled"]
        chosen = await self.choose(question, choices, refusal="reject_once")
        return next((a for a in answers if a == chosen), "cancelled")

    async def choose(
        self, question: PermissionQuestion, choices: Sequence[PermissionChoice], *, refusal: str
    ) -> str | None:
        # A card that shows the call's terminal keeps it (and its title, the terminal's label) while it asks.
        title = (card_title(question.content) if self._terminal_cards else None) or question.title
        tool_call: dict[str, Any] = {
            "toolCallId": question.tool_call_id,
            "title": title,
            "kind": question.kind,
            "status": "pending",
        }
        if question.raw_input is not None:
            tool_call["rawInput"] = question.raw_input
        content = tool_content(question.content, terminal_cards=self._terminal_cards)
        if content:
            tool_call["content"] = content
        locations = tool_locations(question.locations)
        if locations:
            tool_call["locations"] = locations
        params = {
            "sessionId": self._session_id,
            "toolCall": tool_call,
            "options": [{"optionId": c.id, "name": c.name, "kind": c.kind} for c in choices],
        }
        try:
            raw = await self._dispatcher.request("session/request_permission", params, wait_s=None)
        except ClientRequestError as exc:
            _log.warning("the client answered a permission request with an error", error=exc.describe())
            raise PermissionDeniedError(
                f"the editor could not ask the user ({exc.describe()}); the call was not run"
            ) from exc
        try:
            outcome = parse(PermissionResult, raw).outcome
        except InvalidParamsError as exc:
            raise PermissionDeniedError(f"the editor's answer to the permission request was unreadable: {exc}") from exc
        if not isinstance(outcome, SelectedOutcome):
            return None
        if any(c.id == outcome.option_id for c in choices):
            return outcome.option_id
        _log.warning("permission answer with an option we did not offer", option=outcome.option_id[:200])
        return refusal


class AcpClientBridge:
    """Per connection: builds each session's sink and gate; offers what the client advertised."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        handshake: Handshake,
        services: SessionServices | None = None,
        *,
        name: str = "stdio",
    ):
        self.dispatcher = dispatcher
        self._handshake = handshake
        self._services = services
        self._read_from: dict[str, Any] | None = None
        self._capabilities = ClientCapabilities()
        self._id = f"{name}-{next(_CONNECTION_NUMBERS)}"

    @property
    def connection_id(self) -> str:
        return self._id

    @property
    def services(self) -> SessionServices:
        if self._services is None:
            raise RuntimeError("this connection has no services: the server could not load them")
        return self._services

    @property
    def present(self) -> bool:
        return not self.dispatcher.client_gone

    @property
    def subagents(self) -> bool:
        """The client advertised ``subagents``: it is shown child sessions (never otherwise)."""
        return self.capabilities.subagents

    @property
    def capabilities(self) -> ClientCapabilities:
        """What the client advertised in its (latest) ``initialize``; nothing before it has sent one."""
        params = self._handshake.params
        if params is not self._read_from:
            self._read_from = params
            try:
                self._capabilities = parse(InitializeParams, params).client_capabilities
            except InvalidParamsError:
                self._capabilities = ClientCapabilities()
        return self._capabilities

    def sink(self, session_id: str) -> AcpUpdateSink:
        return AcpUpdateSink(self, session_id)

    def gate(self, session_id: str) -> AcpPermissionGate:
        return AcpPermissionGate(self.dispatcher, session_id, terminal_cards=self.capabilities.terminal_cards)

    def files(self, session_id: str) -> EditorFiles | None:
        """The client's ``fs/*`` when it advertised either method (the other one then runs on the local disk)."""
        fs = self.capabilities.fs
        if not (fs.read_text_file or fs.write_text_file):
            return None
        return AcpEditorFiles(self.dispatcher, session_id, can_read=fs.read_text_file, can_write=fs.write_text_file)

    def terminals(self, session_id: str) -> EditorTerminals | None:
        """The client's ``terminal/*`` when it advertised ``terminal`` and not agent-owned terminals
        (``_meta.terminal_output``): where it shows those, commands run on this machine, in our sandbox, and stream
        into a terminal card, which a replay shows again (a client terminal dies with the process)."""
        capabilities = self.capabilities
        if not capabilities.terminal or capabilities.terminal_cards:
            return None
        return AcpEditorTerminals(self.dispatcher, session_id)

    def elicitor(self, session_id: str) -> Elicitor | None:
        """Questions to the user (``elicitation/create``, form mode) when the client advertised ``elicitation.form``."""
        return AcpElicitor(self.dispatcher, session_id) if self.capabilities.elicitation_form else None

    def links(self, session_id: str) -> EditorLinks | None:
        """Addresses for the user to open (``elicitation/create``, URL mode, and ``elicitation/complete``) when the
        client advertised ``elicitation.url``."""
        return AcpLinks(self.dispatcher, session_id) if self.capabilities.elicitation_url else None

    def request_elicitor(self, request_id: str | int | None) -> Elicitor | None:
        """Questions tied to one of the client's requests rather than a session (the setup in ``authenticate``)."""
        return AcpElicitor(self.dispatcher, request_id=request_id) if self.capabilities.elicitation_form else None

    async def send(self, session_id: str, update: dict[str, Any]) -> None:
        """A session-level update outside any turn (mode, config options, commands)."""
        await self.sink(session_id).send(update)

    async def commands_changed(self, session_id: str, commands: Sequence[Command]) -> None:
        """The session's slash commands changed (a prompt file came, went or was edited)."""
        await self.send(session_id, commands_update(commands))

    def options(self, options: SessionOptions) -> list[dict[str, Any]]:
        """The session's config options as this client can show them."""
        return config_options(
            options.mode, options.model_id, options.catalog, options.chosen_effort, self._switches(options)
        )

    def view(self, options: SessionOptions) -> dict[str, Any]:
        """What every response that opens a session carries: modes, config options, models."""
        return session_view(
            options.mode, options.model_id, options.catalog, options.chosen_effort, self._switches(options)
        )

    def _switches(self, options: SessionOptions) -> list[tuple[Switch, bool]]:
        """The session's on/off switches, for a client that takes boolean options (none for any other)."""
        if not self.capabilities.boolean_options:
            return []
        return [(switch, options.switch(switch.id)) for switch in SWITCHES]

    async def config_changed(self, session_id: str, options: SessionOptions, *, mode_changed: bool) -> None:
        """A mode switch sends ``current_mode_update`` (for clients that read ``modes``); every change sends the
        full ``config_option_update``. A model switch leaves the mode alone, so it sends no mode update."""
        if mode_changed:
            await self.send(session_id, {"sessionUpdate": "current_mode_update", "currentModeId": options.mode})
        await self.send(session_id, {"sessionUpdate": "config_option_update", "configOptions": self.options(options)})
