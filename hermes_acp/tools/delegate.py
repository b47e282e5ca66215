"""``delegate``: the model hands a task to a child session (a subagent) and gets the child's report back.

The call names the task, a short title, a role (``explore``: read-only tools, the default; ``general``: the parent's
tools under the parent's mode) and optional files or folders to focus on, which must lie inside the session's
directories. What runs the child is the session layer, behind the ``Subagents`` port (``delegation``,
``ToolEnvironment.subagents``): the child is a session of its own, with the parent's rights or fewer, a budget of
requests, tokens and time, and its own cards and questions. A delegation runs beside the other such calls of its
response (``reads_only``): everything its child does is approved and settled in the child's session, so nothing in
the parent's turn waits on its order; how many children run at once is the port's business
(``[agent] max_subagents``).

The result is the child's report. A child that did not finish it (its provider failed, it reached its budget, it
was cancelled) makes the call fail with what it found so far, so the model can go on: never the parent's turn.
This module knows the tool seam and the port; not sessions, not ACP.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hermes_acp.core import Location, SubagentOutcome, TextBlock, TextPart
from hermes_acp.errors import ErrorCode, ToolError, ToolInputError

from .approval import Approval
from .base import Presentation, ToolOutcome, TypedTool
from .context import ToolContext
from .delegation import Delegation

__all__ = ["DELEGATE_TOOL", "DelegateOutput", "DelegateTool"]

DELEGATE_TOOL = "delegate"
MAX_TASK_CHARS = 20_000
MAX_FOCUS = 20
_TITLE_CHARS = 60
_FAILED_CODES: dict[SubagentOutcome, ErrorCode] = {
    "failed": "subagent_failed",
    "budget": "subagent_budget",
    "cancelled": "cancelled",
    "unknown": "outcome_unknown",
}


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    task: str = Field(
        min_length=1,
        max_length=MAX_TASK_CHARS,
        description="What the subagent should do and what its report must answer; it sees nothing else of this"
        " conversation, so say everything it needs.",
    )
    title: str | None = Field(
        default=None, min_length=1, max_length=200, description="A few words naming the task (shown to the user)."
    )
    role: Literal["explore", "general"] = Field(
        default="explore",
        description="explore: read-only tools (search, read, list), for finding things out; general: your own"
        " tools under the session's mode, for work that changes files or runs commands.",
    )
    focus: list[str] = Field(
        default_factory=list,
        max_length=MAX_FOCUS,
        description="Files or folders to start from.",
    )


class DelegateOutput(BaseModel):
    """What the call's record keeps: the child, how it ended, and what it used."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    session_id: str = Field(serialization_alias="sessionId")
    outcome: SubagentOutcome
    input_tokens: int = Field(serialization_alias="inputTokens")
    output_tokens: int = Field(serialization_alias="outputTokens")


class DelegateTool(TypedTool[_Input, DelegateOutput]):
    name = DELEGATE_TOOL
    description = (
        "Hand a self-contained task to a subagent: a fresh session with its own context that works on it and"
        " answers with a concise report (the only thing you get back). Use it for searches and investigations"
        " that would fill your context, or for independent pieces of work; several delegate calls in one response"
        " run at the same time."
    )
    Input = _Input
    read_only = True
    """Offered in ``read_only`` mode too: the call changes nothing itself, and a child of a ``read_only`` session is
    ``read_only`` whatever its role."""

    def reads_only(self, parsed: _Input) -> bool:
        """Runs beside the other such calls of its response: its child's calls are approved in the child."""
        return True

    def present(self, parsed: _Input, ctx: ToolContext) -> Presentation:
        locations = [Location(path=str(ctx.env.workspace.resolve(p))) for p in parsed.focus]
        return Presentation(title=f"Delegate ({parsed.role}): {title_of(parsed)}", kind="think", locations=locations)

    async def approval(self, parsed: _Input, ctx: ToolContext) -> Approval[DelegateOutput]:
        """Nothing to ask: the child's own calls ask in its session, under the parent's mode or a stricter one. A
        focus outside the session's directories is refused (a child has no more rights than its parent)."""
        for raw in parsed.focus:
            if not ctx.env.workspace.contains(ctx.env.workspace.resolve(raw)):
                raise ToolInputError(f"focus {raw!r} is outside the session's directories; a subagent cannot go there")
        return Approval(ctx.tool_call_id)

    async def run(
        self, parsed: _Input, approval: Approval[DelegateOutput], ctx: ToolContext
    ) -> ToolOutcome[DelegateOutput]:
        if ctx.env.subagents is None:
            raise ToolError("delegation is not available in this session")
        delegation = Delegation(
            task=parsed.task,
            title=title_of(parsed),
            role=parsed.role,
            focus=tuple(ctx.env.workspace.resolve(p) for p in parsed.focus),
            tool_call_id=ctx.tool_call_id,
            turn_id=ctx.turn_id,
        )
        result = await ctx.env.subagents.delegate(delegation)
        output = DelegateOutput(
            session_id=result.session_id,
            outcome=result.outcome,
            input_tokens=result.usage.input_tokens,
            output_tokens=result.usage.output_tokens,
        )
        if result.outcome == "completed":
            text = result.report
            return ToolOutcome(parts=[TextPart(text=text)], content=[TextBlock(text=text)], raw_output=output)
        found = result.report.strip() or "(nothing yet)"
        text = f"The subagent did not finish: {result.detail or result.outcome}.\n\nWhat it found so far:\n{found}"
        return ToolOutcome(
            parts=[TextPart(text=text)],
            content=[TextBlock(text=text)],
            raw_output=output,
            failed=True,
            error_code=_FAILED_CODES[result.outcome],
        )


def title_of(parsed: _Input) -> str:
    """The title the model gave, or the task's first line, cut to a few words."""
    lines = (parsed.title or parsed.task).strip().splitlines()
    text = lines[0].strip() if lines else "task"
    return text if len(text) <= _TITLE_CHARS else text[: _TITLE_CHARS - 1].rstrip() + "…"
