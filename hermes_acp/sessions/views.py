"""The session layer's narrow views: what it needs of a client connection, and what a connection and the turn
wiring may use of a session — so that no module but the manager, which builds it, names ``Session``.

- ``ClientBridge`` is one connection as a session sees it: the services its environment gives (keys, settings, the
  environment commands inherit), whether it is still there, and per session its update sink, its permission gate,
  and the editor's file system, terminals, questions to the user and addresses for the user to open
  (``EditorLinks``) when the client advertised them; and how it shows the session's commands and options when they
  change (each connection as its capabilities allow). A session is attached to several at once
  (``sessions.audience``). ``hermes_acp.protocol`` implements it over ACP; tests use doubles.
- ``LiveSession`` is a live session as a connection's routes (and the host's status) use it: its prompts, steering,
  rewinds and cancel, its options and commands, who is attached, what waits.
- ``WiringView`` is what the turn wiring builds a turn from (``sessions.turn_wiring``); it includes ``SurfaceView``,
  what the tool surface is derived from (``sessions.tool_surface``).

``PromptResult``, ``PromptTicket``, ``QueuedInput`` and ``Foreground`` are the values a prompt, the queue and the
audience answer with. No ACP here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from hermes_acp.commands.command_set import Command
from hermes_acp.commands.runner import CommandRunner
from hermes_acp.commands.skills import SkillShelf
from hermes_acp.core import DisplayBlock, InputKind, Rewound, StopReason, TextBlock, Usage
from hermes_acp.mcp_client import McpServers
from hermes_acp.subagents.lineage import Lineage
from hermes_acp.subagents.runner import SubagentRunner
from hermes_acp.tools.context import EditorFiles, EditorTerminals, ElicitationAnswer, Elicitor, Workspace
from hermes_acp.turns.ports import LiveUsage, PermissionGate, UpdateSink
from hermes_acp.turns.recorder import Recorder

from ._runtime import SessionRuntime
from .services import SessionServices
from .steering import IdleBehavior, SteerOutcome
from .tool_surface import SurfaceView

if TYPE_CHECKING:
    from hermes_acp.commands.instructions import InstructionFile
    from hermes_acp.core.notice import Notice
    from hermes_acp.errors import TurnFailure
    from hermes_acp.providers.catalog import Cost

    from .options import SessionOptions

__all__ = [
    "ClientBridge",
    "EditorLinks",
    "Foreground",
    "ForegroundState",
    "LiveSession",
    "PromptResult",
    "PromptTicket",
    "QueuedInput",
    "WiringView",
]


@dataclass(frozen=True, slots=True)
class PromptResult:
    """How one prompt ended, and what the editor should be told again."""

    stop_reason: StopReason
    usage: Usage | None = None
    """None when no model was asked (a command the session answered itself, or a cancel before the turn began)."""
    mode_changed: bool = False
    config_changed: bool = False
    """The mode, model or thinking effort changed (a command did it)."""
    failure: TurnFailure | None = None
    """What ended the turn before a finished answer: the provider failing after its retries, or a limit."""
    cost: Cost | None = None
    """What the prompt's model calls cost, its subagents' included; None when a model it used has no prices."""
    user_message_id: str | None = None
    """The id the prompt is stored with (what ``_session/rewind`` and a fork at a message name)."""


class PromptTicket(Protocol):
    """One prompt handed to a session (``LiveSession.submit``): when it is inserted, and how it ended."""

    @property
    def message_id(self) -> str:
        """The id the prompt is stored with (its user message's)."""
        ...

    async def inserted(self) -> bool:
        """True once the prompt is in the log; False when it ended without (cancelled or withdrawn before it
        started); the error that stopped it before it was inserted is raised."""
        ...

    async def result(self) -> PromptResult:
        """How the prompt ended; its error raised."""
        ...

    def withdraw(self) -> bool:
        """Take it back when it has not started (True: it will not run)."""
        ...


ForegroundState = Literal["running", "requires_action", "idle"]


@dataclass(frozen=True, slots=True)
class Foreground:
    """Where a session's foreground work stands: ``running`` from the start of a prompt (again once the user
    answered a question), ``requires_action`` while a turn waits on the user, ``idle`` when the prompt ended."""

    state: ForegroundState = "idle"
    stop_reason: StopReason | None = None
    """How the prompt ended (idle only; None: the session has not run one since it opened)."""
    usage: Usage | None = None
    """What it used, its subagents' work included (idle only)."""
    failure: Exception | TurnFailure | None = None
    """Why it failed after its prompt was inserted: the error it raised, or the failure the model request ended it
    on (idle only; a limit it reached is its stop reason, ``max_turn_requests``, not a failure)."""
    limit: TurnFailure | None = None
    """The budget or request limit it stopped at (idle only, with ``max_turn_requests``): what a v1 prompt's answer
    names in ``_meta.hermes.limit``."""
    cost: Cost | None = None
    """What its model calls cost, its subagents' included (idle only; None when a model it used has no prices)."""


@dataclass(frozen=True, slots=True)
class QueuedInput:
    """A prompt or steering message waiting in a session (``/status`` and ``session/list``'s ``_meta`` list them)."""

    input_id: str
    input_kind: InputKind
    display: list[DisplayBlock]

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.display if isinstance(b, TextBlock))


class EditorLinks(Protocol):
    """Addresses the editor opens for the user (ACP ``elicitation/create`` in URL mode): an MCP server's sign-in
    page, or a page a server's question sends the user to."""

    async def open(self, message: str, url: str, elicitation_id: str, *, tool_call_id: str | None) -> ElicitationAnswer:
        """Offer ``url`` with ``message``; ``accept`` once the user agreed to open it. Raises ``ToolError`` when the
        editor could not be asked."""
        ...

    async def completed(self, elicitation_id: str) -> None:
        """What the address stood for is over (``elicitation/complete``); the editor may close what it showed."""
        ...


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

    def links(self, session_id: str) -> EditorLinks | None: ...

    async def send(self, session_id: str, update: dict[str, Any]) -> None:
        """A session-level update the protocol layer rendered (mode, config options), passed on as it is."""
        ...

    async def commands_changed(self, session_id: str, commands: Sequence[Command]) -> None:
        """Tell the editor the session's slash commands are now ``commands``."""
        ...

    async def config_changed(self, session_id: str, options: SessionOptions, *, mode_changed: bool) -> None:
        """Tell the editor the session's options changed (its mode too, when ``mode_changed``)."""
        ...

    async def state_changed(self, session_id: str, state: Foreground) -> None:
        """Tell the editor where the session's foreground work stands (a client that cannot show it is told
        nothing)."""
        ...


class _Attached(Protocol):
    """The connections attached to a session."""

    def __len__(self) -> int: ...

    @property
    def state(self) -> Foreground:
        """Where the session's foreground work stands now."""
        ...

    def has(self, client: Any) -> bool:
        """``client`` is attached."""
        ...

    async def config_changed(self, options: SessionOptions, *, mode_changed: bool) -> None:
        """Each attached connection is told the session's options changed, as it can show them."""
        ...


class _Waiting(Protocol):
    @property
    def working(self) -> bool:
        """A prompt (a turn or a command) is running or queued."""
        ...

    def listing(self) -> list[QueuedInput]: ...

    async def settled(self) -> None:
        """Until the prompt that runs has ended (bounded)."""
        ...


class _Reporting(Protocol):
    async def report_servers(self) -> None:
        """The session's MCP servers that could not start, told once they settled."""
        ...


class _Metered(Protocol):
    def usage(self) -> LiveUsage | None:
        """The context meter now; None without a model."""
        ...

    def cancel_call(self, tool_call_id: str) -> bool:
        """Stop the running tool call ``tool_call_id``: it settles failed as cancelled (False: no such call runs)."""
        ...

    def stop_terminal(self, terminal_id: str) -> bool:
        """Stop the command of the agent-owned terminal ``terminal_id``; its call settles with what it printed
        (False: no command of the session with that terminal may still run)."""
        ...


class LiveSession(Protocol):
    """A live session as a connection's routes use it (the manager hands these out)."""

    @property
    def id(self) -> str: ...

    @property
    def options(self) -> SessionOptions: ...

    @property
    def commands(self) -> CommandRunner: ...

    @property
    def audience(self) -> _Attached: ...

    @property
    def queue(self) -> _Waiting: ...

    @property
    def runtime(self) -> SessionRuntime: ...

    @property
    def notices(self) -> _Reporting: ...

    @property
    def wiring(self) -> _Metered: ...

    def submit(self, display: list[DisplayBlock], *, origin: ClientBridge | None = None) -> PromptTicket: ...

    async def prompt(self, display: list[DisplayBlock], *, origin: ClientBridge | None = None) -> PromptResult: ...

    async def steer(
        self, display: list[DisplayBlock], *, origin: ClientBridge | None, idle: IdleBehavior = "startNewTurn"
    ) -> SteerOutcome: ...

    async def rewind(self, message_id: str, *, field_name: str = "messageId") -> Rewound: ...

    def cancel(self) -> None: ...


class _WiringAudience(PermissionGate, Protocol):
    """The connections attached to a session, as a turn talks to them (its permission gate too)."""

    @property
    def origin(self) -> ClientBridge | None:
        """The connection whose prompt the running turn serves."""
        ...

    def elicitor(self) -> Elicitor | None: ...

    def origin_files(self) -> EditorFiles | None: ...

    def origin_terminals(self) -> EditorTerminals | None: ...

    async def config_changed(self, options: SessionOptions, *, mode_changed: bool) -> None: ...


class _Skills(Protocol):
    @property
    def skills(self) -> SkillShelf: ...

    async def ensure(self) -> None:
        """The first scan of the skills is done (the system prompt lists them)."""
        ...


class _Notify(Protocol):
    async def notify(self, notice: Notice) -> None: ...


class WiringView(SurfaceView, Protocol):
    """What the turn wiring builds a session's turns from."""

    @property
    def id(self) -> str: ...

    @property
    def services(self) -> SessionServices: ...

    @property
    def options(self) -> SessionOptions: ...

    @property
    def lineage(self) -> Lineage: ...

    @property
    def recorder(self) -> Recorder: ...

    @property
    def audience(self) -> _WiringAudience: ...

    @property
    def workspace(self) -> Workspace: ...

    @property
    def instructions(self) -> tuple[InstructionFile, ...]: ...

    @property
    def commands(self) -> _Skills: ...

    @property
    def mcp(self) -> McpServers: ...

    @property
    def runtime(self) -> SessionRuntime: ...

    @property
    def subagents(self) -> SubagentRunner: ...

    @property
    def notices(self) -> _Notify: ...
