"""The verdict: what the model should do next after an input action (docs/computer-use.md §7).

``verdict`` turns an ``ActionReport`` into ``{decision, recommended?, retryable?, next}`` so the model never reads
"the RPC returned" as "the action worked". Rows, in precedence order:

1. a permission code (``policy_denied``, ``permission_denied``, ``authorization_*``, a macOS permission the driver
   lacks, …) → ``deny``: never retry;
2. ``effect == "confirmed"`` or ``verified is True`` → ``done``;
3. ``effect == "unverifiable"`` → ``verify_fresh_state``: re-capture before any retry;
4. a code that means "your picture of the screen is out of date" (stale token, window gone, outcome unknown)
   → ``verify_fresh_state`` (our addition: escalating to pixels off a stale picture would be wrong);
5. ``effect == "suspected_noop"``, not ``ok``, or any other code → ``escalate`` one rung: the driver's
   ``recommended`` rung, else pixels after an element action, else foreground after a background one;
6. otherwise (transport ok, no semantic proof) → ``verify_fresh_state``.

It deliberately knows nothing about the driver's wire shapes; ``results`` normalised them already.
"""

from __future__ import annotations

from typing import Any

from .results import ActionReport

__all__ = ["DENY_CODES", "FRESH_STATE_CODES", "verdict"]

DENY_CODES = frozenset(
    {
        "policy_denied",
        "permission_denied",
        "authorization_required",
        "authorization_declined",
        "authorization_canceled",
        "authorization_expired",
        "authorization_scope_mismatch",
        "authorization_host_failed",
        "authorization_suspended",
        "bounded_resource_outside_manifest",
        "foreign_process_termination_denied",
        "foreground_unsupported",
        "desktop_permission_missing",
    }
)
FRESH_STATE_CODES = frozenset(
    {
        "stale_element_token",
        "invalid_element_token",
        "conflicting_element_target",
        "generation_mismatch",
        "snapshot_id_required",
        "screenshot_context_missing",
        "window_id_not_found",
        "window_target_not_found",
        "timeout_outcome_unknown",
        "transport_outcome_unknown",
        "stale_target",
        "unknown_element",
        "no_target",
        "no_screenshot",
        "input_target_mismatch",
    }
)
_NEXT = {
    "deny": "Do not retry this by any route; tell the user what was refused.",
    "done": "The effect is confirmed; go on with the task.",
    "verify_fresh_state": "Capture again (or verify_state) and check the result before repeating anything: "
    "a repeated input can double-fire.",
}


def verdict(report: ActionReport, *, used_element: bool, foreground: bool) -> dict[str, Any]:
    code = report.code
    if code in DENY_CODES:
        return {"decision": "deny", "retryable": False, "next": _NEXT["deny"]}
    if report.effect == "confirmed" or report.verified is True:
        return {"decision": "done", "next": _NEXT["done"]}
    if report.effect == "unverifiable" or code in FRESH_STATE_CODES:
        return {"decision": "verify_fresh_state", "next": _NEXT["verify_fresh_state"]}
    if report.effect == "suspected_noop" or not report.ok or code:
        rung = report.recommended or _next_rung(used_element=used_element, foreground=foreground)
        if rung is None:
            return {
                "decision": "escalate",
                "recommended": None,
                "next": "No higher delivery rung is left: capture to check the state, then report the step as blocked.",
            }
        return {"decision": "escalate", "recommended": rung, "next": _escalation_text(rung)}
    return {"decision": "verify_fresh_state", "next": _NEXT["verify_fresh_state"]}


def _next_rung(*, used_element: bool, foreground: bool) -> str | None:
    if used_element:
        return "px"
    if not foreground:
        return "foreground"
    return None


def _escalation_text(rung: str) -> str:
    if rung == "px":
        return "Re-issue once by coordinate on the same window (off the latest capture's image)."
    if rung == "foreground":
        return (
            'Re-issue once with delivery_mode "foreground" (it raises the window briefly and needs its own '
            "approval), only if foreground input is acceptable."
        )
    return f"Escalate one rung ({rung}) and capture again to check."
