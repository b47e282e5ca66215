"""The subagents port: what a ``delegate`` call hands the session layer (``Delegation``), what comes back
(``DelegationResult``), and who runs it (``Subagents``, ``hermes_acp.subagents.runner`` implements it; a tool reaches
it as ``ToolEnvironment.subagents``). Plain data and a Protocol; it knows neither the tool (``delegate``) nor sessions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from hermes_acp.core import SubagentOutcome, SubagentRole, Usage

__all__ = ["Delegation", "DelegationResult", "Subagents"]


@dataclass(frozen=True, slots=True)
class Delegation:
    """One ``delegate`` call as the session layer runs it."""

    task: str
    title: str
    role: SubagentRole
    focus: tuple[Path, ...]
    tool_call_id: str
    turn_id: str


@dataclass(frozen=True, slots=True)
class DelegationResult:
    """How a child's work ended: its ``report`` (or, when it did not finish, what it found so far) and why."""

    session_id: str
    outcome: SubagentOutcome
    report: str
    detail: str | None = None
    """Why it did not complete (its provider's error, the budget it reached, who cancelled it)."""
    usage: Usage = field(default_factory=Usage)


class Subagents(Protocol):
    """Runs a child session for a ``delegate`` call (``hermes_acp.subagents.runner`` implements it)."""

    async def delegate(self, delegation: Delegation) -> DelegationResult:
        """Run the child to its end; a cancel of the caller stops the child first (then propagates)."""
        ...
