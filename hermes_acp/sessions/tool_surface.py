"""The tool surface of a session, derived from its state before every model request (docs/architecture.md §4.6).

Built-in tools allowed by the mode come first, in their fixed order, then ``delegate`` while the session may start
subagents, then ``ask_user`` when the editor can ask the user questions, then ``load_skill`` when the session has
skills, then ``exit_plan_mode`` in plan mode, then the session's MCP tools sorted by name (``plan`` and
``read_only`` keep only read-only tools: the built-in ones that change nothing, MCP tools with ``readOnlyHint``),
then ``computer_use`` when a driver is available. A subagent gets the same under its own mode (``explore``:
``read_only``), without ``ask_user``, with ``computer_use`` only in the ``general`` role, and no tools at all for
the report it writes past its budget. Nothing is
remembered between requests, so a model or mode switch cannot lose a tool; and the same state gives
byte-identical schemas (prompt caches depend on it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from hermes_acp.core import ModeId
from hermes_acp.core.modes import READ_ONLY_MODES
from hermes_acp.mcp_client import McpServers
from hermes_acp.subagents.lineage import Lineage
from hermes_acp.tools.base import AnyTool
from hermes_acp.tools.context import Elicitor

if TYPE_CHECKING:
    from hermes_acp.computer_use import ComputerUse
    from hermes_acp.tools.load_skill import SkillBook

__all__ = ["SurfaceView", "ToolMakers", "derive_tool_surface", "why_unavailable"]


class ToolMakers(Protocol):
    """The tools the session's turn wiring makes (it imports them)."""

    @property
    def builtin_tools(self) -> tuple[AnyTool, ...]: ...

    @property
    def computer_use(self) -> ComputerUse: ...

    def delegate(self) -> tuple[AnyTool, ...]: ...

    def ask_user(self, elicitor: Elicitor | None) -> tuple[AnyTool, ...]: ...

    def load_skill(self, book: SkillBook) -> tuple[AnyTool, ...]: ...

    def plan_hand_off(self) -> tuple[AnyTool, ...]: ...


class _Mode(Protocol):
    @property
    def mode(self) -> ModeId: ...


class _Asking(Protocol):
    def elicitor(self) -> Elicitor | None: ...


class _Skills(Protocol):
    @property
    def skills(self) -> SkillBook: ...


class SurfaceView(Protocol):
    """What the tool surface is derived from: the session's state and its turn wiring's tools."""

    @property
    def options(self) -> _Mode: ...

    @property
    def lineage(self) -> Lineage: ...

    @property
    def audience(self) -> _Asking: ...

    @property
    def commands(self) -> _Skills: ...

    @property
    def mcp(self) -> McpServers: ...

    @property
    def wiring(self) -> ToolMakers: ...


def derive_tool_surface(session: SurfaceView) -> Sequence[AnyTool]:
    wiring = session.wiring
    link = session.lineage.link
    if link is not None and link.reporting:
        return []  # a subagent past its budget writes its report without tools
    mode = session.options.mode
    asking = wiring.ask_user(session.audience.elicitor()) if link is None else ()  # a subagent cannot ask the user
    skills = wiring.load_skill(session.commands.skills)
    handing_off = wiring.plan_hand_off() if mode == "plan" else ()
    offered = (*wiring.builtin_tools, *wiring.delegate(), *asking, *skills, *handing_off, *session.mcp.tools())
    tools = [tool for tool in offered if mode not in READ_ONLY_MODES or tool.read_only]
    if wiring.computer_use.available and (link is None or link.role == "general"):
        tools.append(wiring.computer_use.tool)  # in read_only too: observation is allowed, the policy denies input
    return tools


def why_unavailable(session: SurfaceView, name: str) -> str:
    """Why the model cannot call ``name`` now, in words it can act on (the error of a call to it)."""
    mode = session.options.mode
    link = session.lineage.link
    if name == "delegate" and not session.lineage.may_delegate:
        if link is not None:
            return "a subagent cannot delegate further: do the work yourself, or say in your report what is left"
        return "delegation is off in this configuration ([agent] subagent_depth = 0)"
    if name == "ask_user" and link is not None:
        return "a subagent cannot ask the user: decide yourself, or say in your report what needs an answer"
    if name == "ask_user" and session.audience.elicitor() is None:
        return "the editor cannot show questions to the user: decide yourself, or ask in your answer and stop there"
    if name == "exit_plan_mode":
        return f"the session is in {mode} mode, not in plan mode"
    if name == "load_skill":
        return "the session has no skills"
    return f"the session is in {mode} mode"
