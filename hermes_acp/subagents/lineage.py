"""Where a session stands among delegations: its ``Lineage`` (the ``SubagentLink`` to its parent when it is a live
child, whether it may delegate further, whose "always" rules it follows, what it refuses from a client), what a
child's system prompt adds to its parent's, and how the two sides see each other.

A child takes tasks from its parent only: a client's prompt, mode, model or option change is refused, for a live
child and for one loaded from the store on its own. It runs with its parent's rights or fewer: ``explore`` reads
only, ``general`` follows the parent's mode (a parent that plans gives ``read_only``).

The sessions are seen through narrow protocols, as rewind sees its session: ``ParentView`` (what a child and its
runner need of the session that delegated), ``ChildView`` (what a runner needs of a child), ``ChildOpener`` (the
session manager: children are live sessions like any other). The session layer meets them; nothing here imports it
or knows ACP.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from hermes_acp.config import Settings
from hermes_acp.core import DisplayBlock, ModeId, StopReason, SubagentRole
from hermes_acp.core.modes import READ_ONLY_MODES
from hermes_acp.errors import InvalidParamsError, TurnFailure
from hermes_acp.providers.catalog import CatalogModel
from hermes_acp.storage.base import SessionRecord, SessionStore
from hermes_acp.tools.context import Workspace
from hermes_acp.turns.ports import LiveUpdate
from hermes_acp.turns.recorder import Recorder

from .view import Fanout, Relay

if TYPE_CHECKING:
    from hermes_acp.computer_use import ComputerUse
    from hermes_acp.exec.sandbox import Sandbox
    from hermes_acp.turns.budget import Budget

__all__ = ["ChildOpener", "ChildView", "Lineage", "ParentView", "SubagentLink", "subagent_prompt"]

_SUBAGENT_PROMPT = """

You are a subagent: another Hermes session delegated one task to you. You see that task only, not the conversation
it came from. Work on it with your tools, then end with a concise report for the session that delegated it: what
you found or did, with file paths and line numbers where they matter, and what is left undone. The report is all it
gets back, so make it complete but short. You cannot ask the user questions.
{role}{depth}"""
_ROLES: dict[SubagentRole, str] = {
    "explore": "Your role is explore: you may only read (search, read and list files); change nothing.",
    "general": "Your role is general: you may change files and run commands as the session's mode allows; say in"
    " your report what you changed.",
}


def subagent_prompt(role: SubagentRole, *, may_delegate: bool) -> str:
    """What a child's system prompt adds to its parent's (byte-identical for the child's life)."""
    depth = "" if may_delegate else " You cannot delegate further."
    return _SUBAGENT_PROMPT.format(role=_ROLES[role], depth=depth)


class ParentServices(Protocol):
    @property
    def settings(self) -> Settings: ...

    @property
    def store(self) -> SessionStore: ...


class Inherited(Protocol):
    """What a child's turns take from its parent's turn wiring as they are: its sandbox, its ``computer_use`` and its
    budget."""

    @property
    def sandbox(self) -> Sandbox: ...

    @property
    def computer_use(self) -> ComputerUse: ...

    @property
    def budget(self) -> Budget: ...


class ParentOptions(Protocol):
    @property
    def record(self) -> SessionRecord:
        """As last stored (a child's record takes its directories and switches)."""
        ...

    @property
    def mode(self) -> ModeId: ...

    def current_model(self) -> CatalogModel | None: ...

    def configured_model(self, model_id: str) -> CatalogModel | None: ...


class ParentView(Protocol):
    """What a child and its runner need of the session that delegated to it."""

    @property
    def id(self) -> str: ...

    @property
    def lineage(self) -> Lineage: ...

    @property
    def options(self) -> ParentOptions: ...

    @property
    def audience(self) -> Fanout: ...

    @property
    def recorder(self) -> Recorder: ...

    @property
    def services(self) -> ParentServices: ...

    @property
    def workspace(self) -> Workspace: ...

    @property
    def wiring(self) -> Inherited: ...


class TaskEnd(Protocol):
    """How a child's task ended."""

    @property
    def stop_reason(self) -> StopReason: ...

    @property
    def failure(self) -> TurnFailure | None: ...


class Tailed(Protocol):
    def tail(self) -> list[LiveUpdate]:
        """What the child streamed that is not in its log yet."""
        ...


class RunningChild(Protocol):
    @property
    def session(self) -> ChildView | None: ...


class Family(Protocol):
    """A session's own children, as its runner keeps them."""

    @property
    def running(self) -> Mapping[str, RunningChild]:
        """The delegations running now, by child session id."""
        ...

    def held(self) -> contextlib.AbstractAsyncContextManager[None]:
        """The session's writes held, and its running children's."""
        ...


class ChildView(Protocol):
    """What a runner needs of a child it opened."""

    @property
    def id(self) -> str: ...

    @property
    def recorder(self) -> Recorder: ...

    @property
    def workspace(self) -> Workspace: ...

    @property
    def audience(self) -> Tailed: ...

    @property
    def subagents(self) -> Family: ...

    async def task(self, display: list[DisplayBlock]) -> TaskEnd: ...

    def cancel(self) -> None: ...

    async def close(self) -> None: ...


class ChildOpener(Protocol):
    """What a runner needs of the session manager: children are live sessions like any other (the manager's)."""

    def child_record(self, parent: ParentView, link: SubagentLink, model: CatalogModel | None) -> SessionRecord:
        """The record a child of ``parent`` is stored with (not stored yet)."""
        ...

    async def open_child(self, record: SessionRecord, link: SubagentLink, relay: Relay) -> ChildView: ...

    async def close_child(self, child: ChildView) -> None: ...


@dataclass(eq=False)
class SubagentLink:
    """A live child's tie to its parent: what it may do, and where it stands with its budget."""

    parent: ParentView
    tool_call_id: str
    turn_id: str
    title: str
    role: SubagentRole
    depth: int
    """1 for a child of a top-level session."""
    max_requests: int
    reporting: bool = False
    """Its budget is used up: the turn that writes the report gets no tools and one request."""

    def mode(self) -> ModeId:
        """``explore`` reads only; ``general`` follows the parent's mode as it is now (never more; a parent that
        plans gives ``read_only``: a child cannot hand the plan off)."""
        mode = self.parent.options.mode
        return "read_only" if self.role == "explore" or mode in READ_ONLY_MODES else mode

    @property
    def root(self) -> ParentView:
        """The session a client opened, at the top of the delegations: its connections see every descendant."""
        link = self.parent.lineage.link
        return link.root if link is not None else self.parent

    @property
    def root_card(self) -> str:
        """The root's ``delegate`` call this child works under (where a client without child sessions sees it)."""
        link = self.parent.lineage.link
        return link.root_card if link is not None else self.tool_call_id


class Lineage:
    """One session's place among delegations (see the module docstring). ``children``: what opens its own children
    (None: it cannot delegate); ``recorder``: its own, whose rules it follows unless it is a live child."""

    def __init__(
        self,
        record: SessionRecord,
        recorder: Recorder,
        settings: Settings,
        *,
        link: SubagentLink | None = None,
        children: ChildOpener | None = None,
    ):
        self.link = link
        """A live child's tie to its parent (None for a session a client opened, or a child loaded on its own)."""
        self.children = children
        self._record = record
        self._recorder = recorder
        self._settings = settings

    @property
    def depth(self) -> int:
        """0 for a session a client opened; a child's is its parent's plus one."""
        return self.link.depth if self.link is not None else 0

    @property
    def may_delegate(self) -> bool:
        """The ``delegate`` tool is offered (``[agent] subagent_depth``; never while a child writes its report)."""
        if self.link is not None and self.link.reporting:
            return False
        return self.children is not None and self.depth < self._settings.agent.subagent_depth

    @property
    def is_subagent(self) -> bool:
        """A child session (live with its parent, or loaded from the store on its own)."""
        provenance = self._record.provenance
        return self.link is not None or (provenance is not None and provenance.kind == "subagent")

    @property
    def rules_recorder(self) -> Recorder:
        """Whose "always" rules this session's permission questions follow: a child's are its parent's."""
        return self.link.parent.lineage.rules_recorder if self.link is not None else self._recorder

    def prompt(self) -> str:
        """What the session's system prompt adds to the project's: a child's role and that it ends with a report."""
        if self.link is None:
            return ""
        return subagent_prompt(self.link.role, may_delegate=self.may_delegate)

    def refuse(self, what: str) -> None:
        """``InvalidParamsError`` when the session is a child: it takes ``what`` from its parent only."""
        if self.is_subagent:
            parent = self.link.parent.id if self.link is not None else self._record.parent_id
            raise InvalidParamsError(
                f"sessionId: {self._record.id} is a subagent of session {parent}; it takes tasks from its parent"
                f" only, not {what} from a client",
                field="sessionId",
            )
