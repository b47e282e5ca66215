"""Calling a tool the way the turn loop does, without the loop: a ``ToolContext`` over a temporary workspace that
records live progress, and ``call`` = validate → approval (granted) → run (the approval is returned for checks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import anyio

from hermes_acp.core import DisplayBlock, ModeId
from hermes_acp.exec.sandbox import Sandbox
from hermes_acp.tools.approval import Approval
from hermes_acp.tools.base import Tool, ToolOutcome
from hermes_acp.tools.context import (
    ApprovalRequest,
    EditorFiles,
    EditorTerminals,
    ToolContext,
    ToolEnvironment,
    Workspace,
)
from tests.fakes.tools import approved

__all__ = ["UNCONFINED", "Called", "Progress", "call", "context", "request_of"]

Out = TypeVar("Out")

UNCONFINED = Sandbox(mode="off")
"""Commands run as plain processes (the runner's own tests: pids, process groups); the sandbox has its tests."""


@dataclass
class Progress:
    """Every live content update a tool streamed, in order."""

    updates: list[list[DisplayBlock]] = field(default_factory=list)
    arrived: anyio.Event = field(default_factory=anyio.Event)

    async def __call__(self, content: list[DisplayBlock]) -> None:
        self.updates.append(content)
        self.arrived.set()
        self.arrived = anyio.Event()

    def texts(self) -> list[str]:
        return [getattr(update[0], "text", "") for update in self.updates if update]


def context(
    cwd: Path,
    *,
    additional: tuple[Path, ...] = (),
    mode: ModeId = "default",
    progress: Progress | None = None,
    files: EditorFiles | None = None,
    terminals: EditorTerminals | None = None,
    sandbox: Sandbox | None = UNCONFINED,
) -> ToolContext:
    env = ToolEnvironment(
        session_id="sess_test",
        workspace=Workspace(cwd=cwd, additional=additional),
        cache_dir=cwd / ".cache-unused",
        sandbox=sandbox,
    )
    return ToolContext(
        env=env,
        turn_id="turn_test",
        tool_call_id="call_test",
        mode=mode,
        progress=progress or Progress(),
        files=files,
        terminals=terminals,
    )


@dataclass
class Called(Generic[Out]):
    approval: Approval[Out]
    outcome: ToolOutcome[Out]

    @property
    def request(self) -> ApprovalRequest | None:
        return self.approval.request

    @property
    def output(self) -> Out:
        """The tool's result (the call succeeded)."""
        assert self.outcome.raw_output is not None, self.outcome.parts
        return self.outcome.raw_output

    @property
    def text(self) -> str:
        return "".join(getattr(p, "text", "") for p in self.outcome.parts)


async def request_of(tool: Tool[Any, Any], ctx: ToolContext, **arguments: Any) -> ApprovalRequest:
    """The question a call asks the policy (it must have one)."""
    approval = await tool.approval(tool.validate(arguments), ctx)
    assert approval.request is not None
    return approval.request


async def call(tool: Tool[Any, Out], ctx: ToolContext, **arguments: Any) -> Called[Out]:
    """validate → approval (granted) → run, bounded; errors propagate (ToolError subclasses) as they would to the
    loop."""
    parsed = tool.validate(arguments)
    tool.present(parsed, ctx)
    with anyio.fail_after(30):
        approval = await approved(tool, parsed, ctx)
        outcome = await tool.run(parsed, approval, ctx)
    return Called(approval, outcome)
