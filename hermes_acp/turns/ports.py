"""The ports the turn loop talks through: where updates go, who answers permission questions, and where steering
messages for the running turn wait.

The sink and the gate are implemented in ``hermes_acp.protocol`` (over the ACP connection) and by test doubles; the
steering inbox by the session (``hermes_acp.sessions.steering``). Stored events are
emitted through ``UpdateSink.emit_event`` so that a live turn and a replay render from the same records; the
``Live*`` updates are transient (streamed text, progress, a compaction while it runs, the context meter) and never
stored. A sink may drop what its client cannot show (compaction updates to a client without that capability).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from hermes_acp.core import DisplayBlock, Location, ModeId, SessionEvent, ToolKind
from hermes_acp.core.notice import Notice
from hermes_acp.providers.catalog import Cost

if TYPE_CHECKING:
    from hermes_acp.tools.base import AnyTool

    from .budget import CapStatus

__all__ = [
    "CancelTarget",
    "LiveCancelOpen",
    "LiveCompaction",
    "LiveCompactionChunk",
    "LiveSubagentState",
    "LiveTerminalOutput",
    "LiveTextChunk",
    "LiveThoughtChunk",
    "LiveToolProgress",
    "LiveUpdate",
    "LiveUsage",
    "Notice",
    "PermissionAnswer",
    "PermissionChoice",
    "PermissionGate",
    "PermissionKind",
    "PermissionQuestion",
    "Steer",
    "SteeringInbox",
    "ToolSurface",
    "UpdateSink",
]


@dataclass(frozen=True, slots=True)
class LiveTextChunk:
    message_id: str
    text: str


@dataclass(frozen=True, slots=True)
class LiveThoughtChunk:
    message_id: str
    text: str


@dataclass(frozen=True, slots=True)
class LiveToolProgress:
    """A running tool call: ``in_progress``, optionally with its live content (replaces the previous content)."""

    tool_call_id: str
    content: list[DisplayBlock] | None = None


@dataclass(frozen=True, slots=True)
class LiveTerminalOutput:
    """New output of a running command's agent-owned terminal (the call's ``AgentTerminalBlock``): ``data`` is
    appended to what the terminal showed; ``fallback`` is the call's live content for a client without agent-owned
    terminals (it replaces the previous content, like ``LiveToolProgress``)."""

    tool_call_id: str
    terminal_id: str
    data: str
    fallback: list[DisplayBlock]


@dataclass(frozen=True, slots=True)
class LiveCompaction:
    """A compaction that has not finished (``in_progress``) or never will (``failed``, ``cancelled``). A finished one
    is the stored ``ContextCompacted`` event."""

    compaction_id: str
    status: Literal["in_progress", "failed", "cancelled"]
    error: str | None = None


@dataclass(frozen=True, slots=True)
class LiveCompactionChunk:
    """A piece of a compaction's summary as it streams."""

    compaction_id: str
    text: str


@dataclass(frozen=True, slots=True)
class LiveUsage:
    """The context meter: tokens the context holds now, the window, and what the session cost so far."""

    used: int
    size: int
    cost: Cost | None = None
    budget: tuple[CapStatus, ...] = ()
    """Each ``[budget]`` cap that is set, spent and left (``turns.budget``)."""


@dataclass(frozen=True, slots=True)
class LiveSubagentState:
    """A running child's work state on its parent: working, or waiting for the user (a permission question)."""

    session_id: str
    state: Literal["running", "requires_action"]


CancelTarget = Literal["tool_call", "terminal"]
"""What of an announced call a client may stop: the whole call, or only the command of its agent-owned terminal."""


@dataclass(frozen=True, slots=True)
class LiveCancelOpen:
    """A cancel a client may still send for a call it was shown only as a replay (a replayed announcement
    advertises none): told to one connection after its catch-up, while the call (or its command) may still run."""

    tool_call_id: str
    target: CancelTarget


LiveUpdate = (
    LiveTextChunk
    | LiveThoughtChunk
    | LiveToolProgress
    | LiveTerminalOutput
    | LiveCompaction
    | LiveCompactionChunk
    | LiveUsage
    | LiveSubagentState
    | LiveCancelOpen
)


class UpdateSink(Protocol):
    """Where a session's updates go. Sends are awaited in order; nothing is fired and forgotten. Each send is
    bounded by the sink itself: one whose reader stops taking updates stops sending to it live until the turn ends
    (its ``TurnEnded``), rather than hold the turn (the recorder adds no bound of its own)."""

    async def emit_event(self, event: SessionEvent, *, live: bool, seq: int | None = None) -> None:
        """Render a stored event. ``live`` is False during ``session/load`` replay; ``seq`` is its place in the
        session's log (None: not stored, or a child's in its parent's replay), what its delivery cursor names."""
        ...

    async def emit_live(self, update: LiveUpdate) -> None: ...

    async def notice(self, notice: Notice) -> bool:
        """Show ``notice`` live; False when the client does not take notices (the caller stores its text)."""
        ...


PermissionAnswer = Literal["allow_once", "allow_always", "reject_once", "reject_always", "cancelled"]
PermissionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]


@dataclass(frozen=True, slots=True)
class PermissionChoice:
    """One option of a question that offers choices of its own (the plan hand-off's "Ready to code?")."""

    id: str
    name: str
    kind: PermissionKind
    """How the editor shows it (ACP's permission option kinds)."""


@dataclass(frozen=True, slots=True)
class PermissionQuestion:
    """``session/request_permission`` for an announced tool call, in neutral terms."""

    tool_call_id: str
    title: str
    kind: ToolKind
    raw_input: Any = None
    content: list[DisplayBlock] = field(default_factory=list)
    locations: list[Location] = field(default_factory=list)
    offer_always: bool = True


class PermissionGate(Protocol):
    async def ask(self, question: PermissionQuestion) -> PermissionAnswer: ...

    async def choose(
        self, question: PermissionQuestion, choices: Sequence[PermissionChoice], *, refusal: str
    ) -> str | None:
        """Ask ``question`` with ``choices``; the id of the one chosen, or None when the user cancelled the turn.
        An answer naming no offered choice counts as ``refusal``."""
        ...


@dataclass(frozen=True, slots=True)
class Steer:
    """A steering message for the running turn, already stored as queued (``InputQueued``)."""

    input_id: str
    display: list[DisplayBlock]


class SteeringInbox(Protocol):
    """Steering messages sent to the running turn, taken at its safe points (between two model requests, once the
    calls of the response before have settled). Only the turn loop takes from it; nothing here awaits."""

    def take(self) -> list[Steer]:
        """The messages that arrived since the last take, in arrival order."""
        ...

    def close_if_empty(self) -> bool:
        """True, and nothing more is accepted, when no message waits (the turn may end); False when one does."""
        ...

    def close(self) -> list[Steer]:
        """Accept nothing more; the messages still waiting (the turn ends without them)."""
        ...


class ToolSurface(Protocol):
    """The tools a session offers its model, derived from the session's state before each request, so a mode
    switch cannot lose a tool (docs/architecture.md §4.6); the session's turn wiring builds it."""

    @property
    def mode(self) -> ModeId:
        """The session's mode now (what each call's approval follows)."""
        ...

    def tools(self) -> Sequence[AnyTool]:
        """The tools to offer in the next request."""
        ...

    def why_unavailable(self, name: str) -> str:
        """Why the model cannot call ``name`` now, in words it can act on (the error of a call to it)."""
        ...
