"""The approval flow for one tool call: policy first, then the editor's permission prompt when it says "ask".

The flow takes the call's ``Approval`` (what the tool's ``approval()`` returned, keyed by the call id) and gives it
back granted (``not_needed``, ``policy``, ``allow_once``, ``allow_always``), or raises. Decisions come from
``hermes_acp.tools.policy``; questions go through the ``PermissionGate`` port with the call's own ``toolCallId``
(it was announced before). Every answer is stored as ``PermissionResolved`` so "always" rules survive a reload; a
subagent follows its parent's rules, and its "always" answers are stored in the parent's log too, so they hold for
the parent's session. A timeout (``permissions.timeout_s``) denies only that call; nothing latches. A
``cancelled`` answer means the user cancelled the turn. No ACP here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio

from hermes_acp.core import DiffBlock, DisplayBlock, ModeId, PermissionResolved, TextBlock
from hermes_acp.core.bounds import MAX_PERMISSION_TEXT_CHARS, cut_json
from hermes_acp.errors import PermissionDeniedError
from hermes_acp.tools.approval import Approval
from hermes_acp.tools.base import Presentation
from hermes_acp.tools.context import Workspace
from hermes_acp.tools.policy import decide

from .ports import PermissionAnswer, PermissionGate, PermissionQuestion
from .recorder import Recorder

__all__ = ["ApprovalFlow", "TurnCancelledByClient", "bounded_display"]

Out = TypeVar("Out")


class TurnCancelledByClient(Exception):
    """The client answered a permission request with ``cancelled``: the whole turn stops."""


class ApprovalFlow:
    def __init__(
        self,
        *,
        turn_id: str,
        workspace: Workspace,
        mode: Callable[[], ModeId],
        gate: PermissionGate,
        recorder: Recorder,
        timeout_s: float,
        rules: Recorder | None = None,
    ):
        self._turn_id = turn_id
        self._workspace = workspace
        self._mode = mode
        self._gate = gate
        self._recorder = recorder
        self._timeout_s = timeout_s
        self._rules = rules
        """Whose "always" rules apply and also get the "always" answers (a subagent's parent); None: the session's."""

    async def grant(self, presentation: Presentation, approval: Approval[Out]) -> Approval[Out]:
        """``approval`` granted when the call may run; raises ``PermissionDeniedError`` or ``TurnCancelledByClient``."""
        request = approval.request
        if request is None:
            return approval.grant("not_needed")
        tool_call_id = approval.tool_call_id
        owner = self._rules or self._recorder
        verdict = decide(self._mode(), request, self._workspace, owner.projection.rules)
        if verdict.decision == "allow":
            return approval.grant("policy")
        if verdict.decision == "deny":
            raise PermissionDeniedError(f"not allowed: {verdict.reason}. The call was not run.")
        question = PermissionQuestion(
            tool_call_id=tool_call_id,
            title=request.title or presentation.title,
            kind=presentation.kind,
            raw_input=cut_json(request.raw_input, MAX_PERMISSION_TEXT_CHARS),
            content=bounded_display(request.content or presentation.content),
            locations=presentation.locations,
            offer_always=verdict.offer_always,
        )
        answer: PermissionAnswer | None = None
        if self._timeout_s > 0:
            with anyio.move_on_after(self._timeout_s):
                answer = await self._gate.ask(question)
        else:
            answer = await self._gate.ask(question)
        outcome = answer or "timeout"
        resolved = PermissionResolved(
            turn_id=self._turn_id, tool_call_id=tool_call_id, outcome=outcome, scope=verdict.rule
        )
        await self._recorder.record(resolved)
        if self._rules is not None and outcome in ("allow_always", "reject_always"):
            await self._rules.record(resolved)  # the rule holds for the parent's session too
        if outcome in {"allow_once", "allow_always"}:
            return approval.grant("allow_once" if outcome == "allow_once" else "allow_always")
        if outcome == "cancelled":
            raise TurnCancelledByClient
        if outcome == "timeout":
            raise PermissionDeniedError(
                f"no answer to the permission request within {self._timeout_s:g} s; this call was not run"
                " (later calls will ask again)"
            )
        raise PermissionDeniedError("the user refused this call; it was not run")


def bounded_display(blocks: list[DisplayBlock]) -> list[DisplayBlock]:
    """What a permission question shows, each text and each side of a diff within ``MAX_PERMISSION_TEXT_CHARS``
    (``core.bounds``): a longer text is cut with a note, a larger diff is named with its size instead."""
    limit = MAX_PERMISSION_TEXT_CHARS
    shown: list[DisplayBlock] = []
    for block in blocks:
        if isinstance(block, TextBlock) and len(block.text) > limit:
            more = len(block.text) - limit
            shown.append(TextBlock(text=f"{block.text[:limit]}\n… [{more:,} more characters not shown]"))
        elif isinstance(block, DiffBlock) and max(len(block.old_text or ""), len(block.new_text)) > limit:
            size = max(len(block.old_text or ""), len(block.new_text))
            shown.append(TextBlock(text=f"A change to {block.path} of {size:,} characters, too large to show here."))
        else:
            shown.append(block)
    return shown
