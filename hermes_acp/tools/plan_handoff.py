"""``exit_plan_mode``: the model ends planning by handing its plan to the user, who decides whether to start coding.

Offered only in ``plan`` mode (the session builds the tool around its ``HandOff``). The call shows the plan in its
card and asks "Ready to code?" with the options the hand-off offers: a mode that can make changes (the session
switches to it, and the model is told to carry the plan out), or keep planning (the model is told to stay in
plan mode and ask what to change). A cancelled question stops the turn (the hand-off raises). The tool itself
changes nothing, so it needs no approval of its own; what it changes is the user's choice. This module knows
neither the session nor ACP.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from hermes_acp.core import ModeId, TextBlock, TextPart

from .approval import Approval
from .base import Presentation, ToolOutcome, TypedTool
from .context import ToolContext

__all__ = ["HandOff", "PlanHandOffTool"]

MAX_PLAN_CHARS = 20_000


class HandOff(Protocol):
    """How the session asks the user about a plan and switches its mode."""

    async def ask(self, plan: str, *, tool_call_id: str) -> ModeId | None:
        """Ask "Ready to code?" for ``plan``; the mode the session switched to, or None to keep planning."""
        ...


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")
    plan: str = Field(
        min_length=1,
        max_length=MAX_PLAN_CHARS,
        description="The plan in Markdown: what will change and where, in which order, and how it will be checked.",
    )


class PlanHandOffTool(TypedTool[_Input, dict[str, Any]]):
    name = "exit_plan_mode"
    description = (
        "The session is in plan mode: investigate with the read-only tools (nothing may be edited and no command "
        "runs), keep the steps with update_plan if useful, then call this with the finished plan in Markdown. "
        "The user reads it and either switches to a mode that can make changes (then carry the plan out) or asks "
        "you to keep planning."
    )
    Input = _Input
    read_only = True

    def __init__(self, hand_off: HandOff):
        self._hand_off = hand_off

    def present(self, parsed: _Input, ctx: ToolContext) -> Presentation:
        return Presentation(title="Ready to code?", kind="switch_mode", content=[TextBlock(text=parsed.plan)])

    async def run(
        self, parsed: _Input, approval: Approval[dict[str, Any]], ctx: ToolContext
    ) -> ToolOutcome[dict[str, Any]]:
        mode = await self._hand_off.ask(parsed.plan, tool_call_id=ctx.tool_call_id)
        if mode is None:
            text = (
                "The user chose to keep planning; the session stays in plan mode. Do not start on the changes: ask"
                " what the plan should do differently, or refine it and call exit_plan_mode again."
            )
            return ToolOutcome(
                parts=[TextPart(text=text)],
                content=[TextBlock(text=parsed.plan), TextBlock(text="Kept planning.")],
                raw_output={"outcome": "keep_planning"},
            )
        text = f"The user approved the plan; the session is now in {mode} mode. Carry the plan out now."
        return ToolOutcome(
            parts=[TextPart(text=text)],
            content=[TextBlock(text=parsed.plan), TextBlock(text=f"Approved; mode {mode}.")],
            raw_output={"outcome": "approved", "mode": mode},
            proposal=parsed.plan,
        )
