"""Plan mode's hand-off: "Ready to code?" asked of the user, and the mode switch that follows their answer.

In ``plan`` mode the session offers read-only tools and ``exit_plan_mode`` (``tools/plan_handoff.py``), built
around this session's ``PlanHandOff``. The question is a permission request on the hand-off's own tool call with
three choices: start with edits accepted (``accept_edits``), start asking before each edit (``default``), or keep
planning. A start switches the session's mode (stored, and told to the editor at once with ``current_mode_update``
and ``config_option_update``), so the rest of the turn runs in the new mode with its tools; keeping on planning
leaves everything as it was; a cancelled question stops the turn. No ACP here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from hermes_acp.core import ModeId, TextBlock
from hermes_acp.turns.approvals import TurnCancelledByClient
from hermes_acp.turns.ports import PermissionChoice, PermissionGate, PermissionQuestion

__all__ = ["CHOICES", "KEEP_PLANNING", "PlanHandOff"]

KEEP_PLANNING = "keep_planning"
CHOICES: Final[tuple[PermissionChoice, ...]] = (
    PermissionChoice("accept_edits", "Yes, and auto-accept edits", "allow_always"),
    PermissionChoice("default", "Yes, and manually approve edits", "allow_once"),
    PermissionChoice(KEEP_PLANNING, "No, keep planning", "reject_once"),
)
_STARTS: Final[dict[str, ModeId]] = {"accept_edits": "accept_edits", "default": "default"}


class PlanHandOff:
    """The ``HandOff`` of one session: ``gate`` asks (the session's audience), ``start`` switches the session to the
    chosen mode and tells the editors."""

    def __init__(self, gate: PermissionGate, start: Callable[[ModeId], Awaitable[None]]):
        self._gate = gate
        self._start = start

    async def ask(self, plan: str, *, tool_call_id: str) -> ModeId | None:
        question = PermissionQuestion(
            tool_call_id=tool_call_id,
            title="Ready to code?",
            kind="switch_mode",
            content=[TextBlock(text=plan)],
            offer_always=False,
        )
        chosen = await self._gate.choose(question, CHOICES, refusal=KEEP_PLANNING)
        if chosen is None:
            raise TurnCancelledByClient
        mode = _STARTS.get(chosen)
        if mode is None:
            return None
        await self._start(mode)
        return mode
