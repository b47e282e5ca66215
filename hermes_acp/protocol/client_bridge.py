"""The session layer's view of the ACP client: update sink, notices, permission gate, editor files, terminals and
questions to the user.

``AcpClientBridge`` implements ``hermes_acp.sessions.ClientBridge`` over one connection's dispatcher: one per
connection, carrying the services that connection's environment gives. Updates are awaited in order (no
fire-and-forget); a closed connection is tolerated (the update is dropped and logged, the turn still settles and
stores everything). Each update carries the delivery cursor (``_meta.hermes.cursor``, made by the app's ``Epoch``) of
the last stored event passed to the client, the one it was rendered from or one before it (a stored event may show
nothing: a v1 client saw the response stream), on both versions.

The connection's version (``Handshake.version``) decides the rendering: v1 here (``convert``), v2 through
``v2.bridge`` (``v2.render``: upserts, ``state_update`` for where the foreground work stands, the permission
request's v2 shape, ``configId`` options and typed commands, no client file system or terminals: a v2 client has
none). On v1, what the client advertised in ``initialize`` (``capabilities``) decides what is offered to it: its
file system and terminals (not its terminals when it renders agent-owned ones), terminal cards for the commands the
agent runs itself, ``notice`` updates instead of agent text, compaction updates instead of an agent message saying
what was compacted, the ``ask_user`` tool, addresses to open (URL elicitation: an MCP server's sign-in page or its
questions); on v2 all of that is baseline but the client's file system and
terminals, which v2 does not have.

Permission answers map to our four outcomes; an unknown option id counts as a refusal, and a client that answers
with a JSON-RPC error refuses that call with its reason (the turn goes on). An answer that carries an operation id
(``_meta.hermes.operationId``: a client that resends its answer to a question asked again after it reconnected) is
applied once: the same id answering another question is refused (``reliable.operations``). A client that goes away
before it answers raises ``ConnectionError``: another attached connection may still answer (``sessions.audience``).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import structlog

from hermes_acp.commands.command_set import Command
from hermes_acp.core import SessionEvent
from hermes_acp.core.notice import Notice
from hermes_acp.errors import InvalidParamsError, PermissionDeniedError
from hermes_acp.jsonrpc.boundary import ClientRequestError
from hermes_acp.jsonrpc.dispatcher import Dispatcher
from hermes_acp.sessions.options import SessionOptions
from hermes_acp.sessions.switches import Switch
from hermes_acp.sessions.views import EditorLinks, Foreground
from hermes_acp.tools.context import EditorFiles, EditorTerminals, Elicitor
from hermes_acp.turns.ports import LiveUpdate, PermissionAnswer, PermissionChoice, PermissionQuestion, UpdateSink

from .convert import event_updates, live_update, notice_update, tool_content, tool_locations
from .editor import AcpEditorFiles, AcpEditorTerminals, AcpElicitor, AcpLinks
from .handshake import Handshake
from .reliable.epoch import Epoch
from .reliable.meta import client_instance_id, operation_id, update_params
from .reliable.operations import OperationKey, OperationLedger, fingerprint
from .session_view import commands_update, config_options, session_view
from .terminal_cards import card_title
from .v2 import bridge as v2
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

    async def emit_event(self, event: SessionEvent, *, live: bool, seq: int | None = None) -> None:
        capabilities = self._bridge.capabilities
        self.passed(seq)
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

    def passed(self, seq: int | None) -> None:
        """The stored event ``seq`` was passed to the client (even one it shows nothing of: a response it saw
        stream): every update from here on carries its cursor."""
        if seq is not None:
            self._bridge.passed(self._session_id, seq)

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
        """One ``session/update``, with the cursor of the last stored event passed to the client."""
        params = update_params(self._session_id, update, self._bridge.cursor(self._session_id))
        try:
            await self._bridge.dispatcher.notify("session/update", params)
        except ConnectionError:
            _log.info("client connection closed; update dropped", session_id=self._session_id)


Asking = Callable[[PermissionQuestion, Sequence[PermissionChoice]], dict[str, Any]]
"""A permission question as ``session/request_permission`` params, in the connection's version."""
Once = Callable[[str, str, str], Awaitable[str]]
"""(operation id, tool call id, the option chosen) → the option that counts (the first answer under that id)."""


class AcpPermissionGate:
    def __init__(
        self,
        dispatcher: Dispatcher,
        session_id: str,
        *,
        terminal_cards: bool = False,
        asking: Asking | None = None,
        once: Once | None = None,
        epoch: str = "",
    ):
        self._dispatcher = dispatcher
        self._session_id = session_id
        self._terminal_cards = terminal_cards
        self._asking = asking or self._v1_params
        self._once = once
        self._epoch = epoch

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
        params = self._asking(question, choices)
        try:
            raw = await self._dispatcher.request("session/request_permission", params, wait_s=None)
        except ClientRequestError as exc:
            _log.warning("the client answered a permission request with an error", error=exc.describe())
            raise PermissionDeniedError(
                f"the editor could not ask the user ({exc.describe()}); the call was not run"
            ) from exc
        try:
            outcome = parse(PermissionResult, raw).outcome
            operation = operation_id(raw, epoch=self._epoch)
        except InvalidParamsError as exc:
            raise PermissionDeniedError(f"the editor's answer to the permission request was unreadable: {exc}") from exc
        if not isinstance(outcome, SelectedOutcome):
            return None
        chosen = outcome.option_id
        if not any(c.id == chosen for c in choices):
            _log.warning("permission answer with an option we did not offer", option=chosen[:200])
            return refusal
        if operation is not None and self._once is not None:
            try:
                return await self._once(operation, question.tool_call_id, chosen)
            except InvalidParamsError as exc:
                raise PermissionDeniedError(f"the editor's answer was refused: {exc}") from exc
        return chosen

    def _v1_params(self, question: PermissionQuestion, choices: Sequence[PermissionChoice]) -> dict[str, Any]:
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
        return {
            "sessionId": self._session_id,
            "toolCall": tool_call,
            "options": [{"optionId": c.id, "name": c.name, "kind": c.kind} for c in choices],
        }


class AcpClientBridge:
    """Per connection: builds each session's sink and gate; offers what the client advertised."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        handshake: Handshake,
        services: SessionServices | None = None,
        *,
        name: str = "stdio",
        ledger: OperationLedger | None = None,
    ):
        self.dispatcher = dispatcher
        self._handshake = handshake
        self._ledger = ledger
        self._passed: dict[str, int] = {}
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
    def version(self) -> int:
        """The ACP version the connection speaks (1 until its ``initialize`` chose another)."""
        return self._handshake.version

    @property
    def epoch(self) -> Epoch:
        """The server epoch its cursors are made with (the app's: ``Handshake.adopt``)."""
        return self._handshake.epoch

    def passed(self, session_id: str, seq: int) -> None:
        """The stored event ``seq`` of ``session_id`` was passed to the client (replays pass earlier ones again)."""
        self._passed[session_id] = seq

    def cursor(self, session_id: str) -> str | None:
        """The delivery cursor of the last stored event of ``session_id`` passed to the client (None: none yet):
        what every update carries, so that a client that rejoins after it misses nothing and gets nothing twice."""
        seq = self._passed.get(session_id)
        return None if seq is None else self.epoch.cursor(session_id, seq)

    @property
    def operation_scope(self) -> str:
        """Whose operation ids the connection's are: the client instance it named in ``initialize``, else itself."""
        try:
            return client_instance_id(self._handshake.params) or self._id
        except InvalidParamsError:
            return self._id

    @property
    def subagents(self) -> bool:
        """The client is shown child sessions: a v2 client always, a v1 client that advertised ``subagents``."""
        return self.version >= 2 or self.capabilities.subagents

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

    def sink(self, session_id: str) -> UpdateSink:
        base = AcpUpdateSink(self, session_id)
        return v2.UpdateSink(base) if self.version >= 2 else base

    def gate(self, session_id: str) -> AcpPermissionGate:
        asking = v2.asking(session_id) if self.version >= 2 else None
        once = self._answered_once(session_id) if self._ledger is not None else None
        cards = self.version < 2 and self.capabilities.terminal_cards
        return AcpPermissionGate(
            self.dispatcher, session_id, terminal_cards=cards, asking=asking, once=once, epoch=self.epoch.id
        )

    def _answered_once(self, session_id: str) -> Once:
        ledger = self._ledger
        assert ledger is not None

        async def once(operation: str, tool_call_id: str, chosen: str) -> str:
            key = OperationKey(self.operation_scope, session_id, operation)
            identity = fingerprint("session/request_permission", {"toolCallId": tool_call_id, "optionId": chosen})

            async def first() -> str:
                return chosen

            return await ledger.apply(key, identity, first)

        return once

    def files(self, session_id: str) -> EditorFiles | None:
        """The client's ``fs/*`` when it advertised either method (the other one then runs on the local disk); a
        v2 client has none."""
        if self.version >= 2:
            return None
        fs = self.capabilities.fs
        if not (fs.read_text_file or fs.write_text_file):
            return None
        return AcpEditorFiles(self.dispatcher, session_id, can_read=fs.read_text_file, can_write=fs.write_text_file)

    def terminals(self, session_id: str) -> EditorTerminals | None:
        """The client's ``terminal/*`` when it advertised ``terminal`` and not agent-owned terminals
        (``_meta.terminal_output``): where it shows those, commands run on this machine, in our sandbox, and stream
        into a terminal card, which a replay shows again (a client terminal dies with the process)."""
        capabilities = self.capabilities
        if self.version >= 2 or not capabilities.terminal or capabilities.terminal_cards:
            return None
        return AcpEditorTerminals(self.dispatcher, session_id)

    def elicitor(self, session_id: str) -> Elicitor | None:
        """Questions to the user (``elicitation/create``, form mode) when the client advertised ``elicitation.form``."""
        return AcpElicitor(self.dispatcher, session_id) if self._forms else None

    def links(self, session_id: str) -> EditorLinks | None:
        """Addresses for the user to open (``elicitation/create``, URL mode, and ``elicitation/complete``) when the
        client advertised ``elicitation.url``."""
        return AcpLinks(self.dispatcher, session_id) if self._urls else None

    def request_elicitor(self, request_id: str | int | None) -> Elicitor | None:
        """Questions tied to one of the client's requests rather than a session (the setup in ``authenticate``)."""
        return AcpElicitor(self.dispatcher, request_id=request_id) if self._forms else None

    @property
    def _forms(self) -> bool:
        if self.version >= 2:
            return v2.advertised(self._handshake.params).elicitation_form
        return self.capabilities.elicitation_form

    @property
    def _urls(self) -> bool:
        if self.version >= 2:
            return v2.advertised(self._handshake.params).elicitation_url
        return self.capabilities.elicitation_url

    async def send(self, session_id: str, update: dict[str, Any]) -> None:
        """A session-level update outside any turn, rendered already (the context meter's)."""
        await AcpUpdateSink(self, session_id).send(update)

    async def commands_changed(self, session_id: str, commands: Sequence[Command]) -> None:
        """The session's slash commands (they changed: a prompt file came, went or was edited)."""
        update = commands_update(commands)
        await self.send(session_id, v2.commands_update(update) if self.version >= 2 else update)

    def options(self, options: SessionOptions) -> list[dict[str, Any]]:
        """The session's config options as this client can show them."""
        listed = config_options(
            options.mode, options.model_id, options.catalog, options.chosen_effort, self._switches(options)
        )
        return v2.config_options(listed) if self.version >= 2 else listed

    def view(self, options: SessionOptions) -> dict[str, Any]:
        """What every response that opens a session carries: modes, config options, models (v2: its options
        only; v2 has no modes or models but the ``mode`` and ``model`` selects)."""
        if self.version >= 2:
            return {"configOptions": self.options(options)}
        return session_view(
            options.mode, options.model_id, options.catalog, options.chosen_effort, self._switches(options)
        )

    def _switches(self, options: SessionOptions) -> list[tuple[Switch, bool]]:
        """The session's on/off switches, for a client that takes boolean options (v2: every client)."""
        if self.version < 2 and not self.capabilities.boolean_options:
            return []
        return options.switches()

    async def config_changed(self, session_id: str, options: SessionOptions, *, mode_changed: bool) -> None:
        """A mode switch sends ``current_mode_update`` (for v1 clients that read ``modes``); every change sends the
        full ``config_option_update``. A model switch leaves the mode alone, so it sends no mode update."""
        if mode_changed and self.version < 2:
            await self.send(session_id, {"sessionUpdate": "current_mode_update", "currentModeId": options.mode})
        await self.send(session_id, {"sessionUpdate": "config_option_update", "configOptions": self.options(options)})

    async def state_changed(self, session_id: str, state: Foreground) -> None:
        """Where the session's foreground work stands: v2's ``state_update`` (a v1 client has no such update)."""
        if self.version >= 2:
            await self.send(session_id, v2.state_update(state))
