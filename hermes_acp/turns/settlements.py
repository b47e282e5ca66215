"""Failed settlements for the tool calls a stopped turn left open (DESIGN §4.5).

A cancelled or broken turn, a store that refused a write and a killed server all leave announced calls without a
result. ``failed_settlements`` fails each one; the caller says why, per call. Only a call the model made gets a
tool result for the history: a result whose call the model never made would make every later request invalid.
Used by the turn loop and by crash recovery, so both settle alike. Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable

from hermes_acp.core import TextBlock, TextPart, ToolCallSettled, ToolResultMessage

from .projection import SessionProjection

__all__ = ["Failure", "failed_settlements"]

Failure = tuple[str, str]
"""``(error_code, text)``: why a call failed, for the editor and (for the model's own calls) the model."""


def failed_settlements(projection: SessionProjection, failure: Callable[[str], Failure]) -> list[ToolCallSettled]:
    """A failed ``ToolCallSettled`` for every open call, in the order they were opened; ``failure(call_id)``."""
    events: list[ToolCallSettled] = []
    for call_id, call in projection.open_calls.items():
        code, text = failure(call_id)
        result = (
            ToolResultMessage(tool_call_id=call_id, name=call.name, parts=[TextPart(text=text)], is_error=True)
            if call.from_model
            else None
        )
        events.append(
            ToolCallSettled(
                turn_id=call.turn_id,
                tool_call_id=call_id,
                status="failed",
                content=[TextBlock(text=text)],
                result=result,
                error_code=code,
            )
        )
    return events
