"""``update_plan``: the model keeps a visible plan; the editor renders it (ACP ``plan``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hermes_acp.core import PlanEntry, TextBlock, TextPart

from .approval import Approval
from .base import Presentation, ToolOutcome, TypedTool
from .context import ToolContext

__all__ = ["UpdatePlanTool"]

_MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1, max_length=500, description="What the step does.")
    status: Literal["pending", "in_progress", "completed"] = "pending"
    priority: Literal["high", "medium", "low"] = "medium"


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")
    steps: list[_Step] = Field(max_length=50, description="Every step, in order.")


class UpdatePlanTool(TypedTool[_Input, None]):
    name = "update_plan"
    description = (
        "Replace the visible plan with the complete list of steps and their status. Use it for multi-step work and"
        " update it as you go."
    )
    Input = _Input
    read_only = True

    def present(self, parsed: _Input, ctx: ToolContext) -> Presentation:
        done = sum(1 for s in parsed.steps if s.status == "completed")
        return Presentation(title=f"Update plan ({done}/{len(parsed.steps)} done)", kind="think")

    async def run(self, parsed: _Input, approval: Approval[None], ctx: ToolContext) -> ToolOutcome[None]:
        entries = [PlanEntry(content=s.content, status=s.status, priority=s.priority) for s in parsed.steps]
        summary = "\n".join(f"{_MARK[s.status]} {s.content}" for s in parsed.steps) or "(empty plan)"
        return ToolOutcome(
            parts=[TextPart(text="Plan updated.")],
            content=[TextBlock(text=summary)],
            plan=entries,
        )
