"""Cards for the tools a provider ran on its own side (Anthropic's web search, Groq's built-in search).

Such a tool already ran when its response arrives, so its card is announced and settled in the same write as the
response: ``ToolCallStarted`` then ``ToolCallSettled`` (completed, or failed when the provider reported an
error), with what the provider returned as the card's text. The settlement carries no result for the model: the
provider's own blocks in the assistant message are what the model reads. A card keeps the provider's id unless
it is missing, already used in the session, or the id of a tool call of the same response (announced beside it:
a hostile or broken provider must not make two cards of one id). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Set

from hermes_acp.core import (
    AssistantMessage,
    ServerToolCallPart,
    ServerToolResultPart,
    TextBlock,
    ToolCallSettled,
    ToolCallStarted,
    ToolKind,
)
from hermes_acp.core.ids import new_tool_call_id

__all__ = ["server_tool_events"]

_NO_RESULT = "Ran on the provider's side; its result went to the model directly."
_TITLE_CHARS = 120


def server_tool_events(
    turn_id: str, message: AssistantMessage, used_ids: Set[str]
) -> list[ToolCallStarted | ToolCallSettled]:
    """A started and a settled event for each provider-side tool call in ``message``."""
    results = {p.tool_call_id: p for p in message.parts if isinstance(p, ServerToolResultPart)}
    events: list[ToolCallStarted | ToolCallSettled] = []
    taken = set(used_ids) | {call.id for call in message.tool_calls}  # the response's own calls keep theirs
    for call in message.server_tool_calls:
        result = results.get(call.id) if call.id else None
        card_id = call.id if call.id and call.id not in taken else new_tool_call_id()
        taken.add(card_id)
        parsed = call.parsed_arguments()
        events.append(
            ToolCallStarted(
                turn_id=turn_id,
                tool_call_id=card_id,
                name=call.name,
                title=_title(call),
                tool_kind=_kind(call.name),
                raw_input=parsed if parsed is not None else call.arguments,
            )
        )
        events.append(_settled(turn_id, card_id, result))
    return events


def _settled(turn_id: str, card_id: str, result: ServerToolResultPart | None) -> ToolCallSettled:
    failed = result is not None and result.is_error
    text = result.text if result is not None and result.text else _NO_RESULT
    return ToolCallSettled(
        turn_id=turn_id,
        tool_call_id=card_id,
        status="failed" if failed else "completed",
        content=[TextBlock(text=text)],
        result=None,
    )


def _title(call: ServerToolCallPart) -> str:
    """The tool's name and its first text argument (a web search's query)."""
    arguments = call.parsed_arguments() or {}
    detail = next((v for v in arguments.values() if isinstance(v, str) and v.strip()), "")
    title = f"{call.name}: {detail}" if detail else call.name
    return title if len(title) <= _TITLE_CHARS else title[: _TITLE_CHARS - 1] + "…"


def _kind(name: str) -> ToolKind:
    if "search" in name:
        return "search"
    if "fetch" in name:
        return "fetch"
    if "execution" in name or "bash" in name:
        return "execute"
    return "other"
