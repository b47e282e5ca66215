"""Pure conversions between ACP wire shapes (plain JSON) and our neutral types.

- prompt content blocks (``wire.ContentBlock``) → ``DisplayBlock``s (what the user sent, stored verbatim);
- stored session events → ``session/update`` payloads, one ``match`` over the event union. The same function
  renders a live turn and a ``session/load`` replay; ``live=True`` only skips what was already streamed as chunks
  (the assistant's text and thoughts) and the user's own prompt, which the client shows itself. A replay never
  names a client terminal: that terminal died with the process that created it (an editor drops updates naming an
  unknown terminal), and the command's output is stored beside it as text. A finished compaction is a completed
  ``compaction_update`` with its summary for a client that advertised ``session.compaction``, and a short agent
  message saying what was compacted for any other. Plans go by id (``plan_update`` / ``plan_removed``) to a client
  that advertised ``plan`` (the 2.4.0 unstable schema), as today's whole ``plan`` to any other;
- a terminal the agent owns (``AgentTerminalBlock``, its live output ``LiveTerminalOutput``) → for a client that
  advertised ``_meta.terminal_output`` (``terminal_cards``), a terminal card in Zed's ``_meta`` dialect
  (``terminal_cards.py``; its output under ``terminal_output_delta`` for a client that advertised that name instead,
  ``terminal_delta``), its title the command; for any other, the text the block carries as its fallback;
- a subagent's events on its parent (``SubagentStarted``, ``SubagentEnded``) → ``subagent_update`` and the
  ``delegate`` card's link, for a client that advertised ``subagents`` only (nothing for any other); a parent's task
  in its child's log → the child's incoming ``session_message`` (its participants) and one ``session_message_chunk``
  per content block (the 2.4.0 unstable schema: a chunk carries only content);
- transient live updates and notices → ``session/update`` payloads: a compaction still running (or stopped) and
  its summary chunks only for a client with ``session.compaction`` (None for the others), and the context meter
  (``usage_update``: tokens in the context now, the window, the session's cost when the models have prices, and
  ``[budget]``'s caps, spent and left, in ``_meta.hermes.budget``).

Every ``tool_call`` carries ``name``: the tool's programmatic name as the model was offered it. No I/O here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, assert_never

from hermes_acp.core import (
    AgentTerminalBlock,
    AssistantMessageStored,
    AssistantTextCheckpointed,
    AudioBlock,
    ContextCompacted,
    DiffBlock,
    DisplayBlock,
    ImageBlock,
    InputDropped,
    InputQueued,
    Location,
    NoticeAdded,
    PermissionResolved,
    PlanUpdated,
    ResourceBlock,
    ResourceLinkBlock,
    Rewound,
    SessionEvent,
    SteeringApplied,
    SubagentEnded,
    SubagentStarted,
    TerminalBlock,
    TextBlock,
    TextPart,
    ThinkingPart,
    TitleSet,
    ToolCallRunning,
    ToolCallSettled,
    ToolCallStarted,
    TurnEnded,
    Usage,
    UserPrompted,
)
from hermes_acp.core.notice import Notice
from hermes_acp.turns.ports import (
    LiveCancelOpen,
    LiveCompaction,
    LiveCompactionChunk,
    LiveSubagentState,
    LiveTerminalOutput,
    LiveTextChunk,
    LiveThoughtChunk,
    LiveToolProgress,
    LiveUpdate,
    LiveUsage,
)

from .terminal_cards import card_title, terminal_events, zed_meta
from .wire import AudioContent, ContentBlock, EmbeddedResourceContent, ImageContent, ResourceLinkContent, TextContent

if TYPE_CHECKING:
    from hermes_acp.providers.catalog import Cost
    from hermes_acp.turns.budget import CapStatus

__all__ = [
    "budget_json",
    "compaction_note",
    "compaction_summary",
    "content_block",
    "cost_json",
    "event_updates",
    "live_update",
    "notice_update",
    "plan_updates",
    "prompt_to_display",
    "session_message",
    "session_message_chunks",
    "subagent_announced",
    "subagent_ended",
    "tool_content",
    "tool_locations",
    "usage_json",
    "usage_update",
]

Update = dict[str, Any]
"""One ``session/update``'s ``update`` object."""


def prompt_to_display(blocks: list[ContentBlock]) -> list[DisplayBlock]:
    out: list[DisplayBlock] = []
    for block in blocks:
        match block:
            case TextContent():
                out.append(TextBlock(text=block.text))
            case ImageContent():
                out.append(ImageBlock(media_type=block.mime_type, data=block.data, uri=block.uri))
            case AudioContent():
                out.append(AudioBlock(media_type=block.mime_type, data=block.data))
            case ResourceLinkContent():
                out.append(ResourceLinkBlock(uri=block.uri, name=block.name, media_type=block.mime_type))
            case EmbeddedResourceContent():
                resource = block.resource
                text, blob = (resource.text, None) if hasattr(resource, "text") else (None, resource.blob)
                out.append(ResourceBlock(uri=resource.uri, media_type=resource.mime_type, text=text, blob=blob))
            case _:
                assert_never(block)
    return out


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def content_block(block: DisplayBlock) -> dict[str, Any]:
    """A display block as an ACP content block (diffs and terminals become text here)."""
    match block:
        case TextBlock():
            return _text(block.text)
        case ImageBlock():
            return _drop_none({"type": "image", "data": block.data, "mimeType": block.media_type, "uri": block.uri})
        case AudioBlock():
            return {"type": "audio", "data": block.data, "mimeType": block.media_type}
        case ResourceLinkBlock():
            return _drop_none(
                {"type": "resource_link", "uri": block.uri, "name": block.name, "mimeType": block.media_type}
            )
        case ResourceBlock():
            contents = {"uri": block.uri, "mimeType": block.media_type}
            if block.text is not None:
                contents["text"] = block.text
            else:
                contents["blob"] = block.blob or ""
            return {"type": "resource", "resource": _drop_none(contents)}
        case DiffBlock():
            return _text(f"diff {block.path}")
        case TerminalBlock():
            return _text(f"terminal {block.terminal_id}")
        case AgentTerminalBlock():
            return _text("\n".join(b.text for b in block.fallback) or block.command)
        case _:
            assert_never(block)


def tool_content(
    blocks: list[DisplayBlock], *, live: bool = True, terminal_cards: bool = False
) -> list[dict[str, Any]]:
    """Tool-call content; a replay (``live=False``) leaves out client terminals (see the module docstring). An
    agent-owned terminal is a terminal item (when it ran) and its note for a client with ``terminal_cards``, its
    fallback text for any other."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, AgentTerminalBlock):
            if not terminal_cards:
                out.extend(tool_content(list(block.fallback)))
                continue
            if block.ran:
                out.append({"type": "terminal", "terminalId": block.terminal_id})
            if block.note:
                out.append({"type": "content", "content": _text(block.note)})
        elif isinstance(block, DiffBlock):
            diff: dict[str, Any] = {"type": "diff", "path": block.path, "newText": block.new_text}
            if block.old_text is not None:
                diff["oldText"] = block.old_text
            out.append(diff)
        elif isinstance(block, TerminalBlock):
            if live:
                out.append({"type": "terminal", "terminalId": block.terminal_id})
        else:
            out.append({"type": "content", "content": content_block(block)})
    return out


def tool_locations(locations: list[Location]) -> list[dict[str, Any]] | None:
    return [_drop_none({"path": loc.path, "line": loc.line}) for loc in locations] or None


def event_updates(
    event: SessionEvent,
    *,
    live: bool,
    compaction: bool = False,
    plans: bool = False,
    terminal_cards: bool = False,
    subagents: bool = False,
    terminal_delta: bool = False,
) -> list[Update]:
    """``compaction``: the client advertised ``session.compaction`` (it renders compaction updates); ``plans``: it
    advertised ``plan`` (unstable: plans by id, ``plan_update`` / ``plan_removed``); ``terminal_cards``: it
    advertised ``_meta.terminal_output`` (it renders agent-owned terminals); ``subagents``: it advertised
    ``subagents`` (it is told about child sessions; a client without it is told nothing of them);
    ``terminal_delta``: it reads a terminal card's output from ``_meta.terminal_output_delta``."""
    match event:
        case UserPrompted() if event.sender_session_id is not None:  # a parent's task: no client showed it itself
            return session_message_chunks(event)
        case UserPrompted():
            if live:
                return []
            return _user_chunks(event.display, event.message_id)
        case SteeringApplied():  # shown where it was applied, live too: the client showed it nowhere yet
            return _user_chunks(event.display, event.message_id)
        case InputDropped() | Rewound():
            return [_chunk("agent_message_chunk", event.text, event.message_id)]
        case AssistantMessageStored():
            updates: list[Update] = []
            if not live:
                thought = "".join(p.text for p in event.message.parts if isinstance(p, ThinkingPart) and p.text)
                text = "".join(p.text for p in event.message.parts if isinstance(p, TextPart))
                if thought:
                    updates.append(_chunk("agent_thought_chunk", thought, event.message_id))
                if text:
                    updates.append(_chunk("agent_message_chunk", text, event.message_id))
            return updates
        case AssistantTextCheckpointed():
            if live:  # streamed already
                return []
            return [
                _chunk(kind, text, event.message_id)
                for kind, text in (("agent_thought_chunk", event.thinking), ("agent_message_chunk", event.text))
                if text
            ]
        case ToolCallRunning():
            return [{"sessionUpdate": "tool_call_update", "toolCallId": event.tool_call_id, "status": "in_progress"}]
        case ToolCallStarted():
            title = (card_title(event.content) if terminal_cards else None) or event.title
            return [
                _drop_none(
                    {
                        "sessionUpdate": "tool_call",
                        "toolCallId": event.tool_call_id,
                        "name": event.name,
                        "title": title,
                        "kind": event.tool_kind,
                        "status": "pending",
                        "rawInput": event.raw_input,
                        "locations": tool_locations(event.locations),
                        "content": tool_content(event.content, live=live, terminal_cards=terminal_cards) or None,
                        "_meta": zed_meta(terminal_events(event.content), delta=terminal_delta)
                        if terminal_cards
                        else None,
                    }
                )
            ]
        case ToolCallSettled():
            return [
                _drop_none(
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": event.tool_call_id,
                        "status": event.status,
                        "content": tool_content(event.content, live=live, terminal_cards=terminal_cards),
                        "rawOutput": event.raw_output,
                        "_meta": zed_meta(terminal_events(event.content, live=live), delta=terminal_delta)
                        if terminal_cards
                        else None,
                    }
                )
            ]
        case PlanUpdated():
            return plan_updates(event, plans=plans)
        case NoticeAdded():  # a paragraph of its own: the model's answer that follows starts on a line of its own
            return [_chunk("agent_message_chunk", event.text.rstrip("\n") + "\n\n", event.message_id)]
        case TitleSet():
            return [
                _drop_none(
                    {"sessionUpdate": "session_info_update", "title": event.title, "updatedAt": event.updated_at}
                )
            ]
        case ContextCompacted():
            if not compaction:
                return [_chunk("agent_message_chunk", compaction_note(event), event.message_id)]
            summary = [_text(compaction_summary(event))]
            return [
                {
                    "sessionUpdate": "compaction_update",
                    "compactionId": event.compaction_id,
                    "status": "completed",
                    "summary": summary,
                }
            ]
        case SubagentStarted():
            return subagent_announced(event) if subagents else []
        case SubagentEnded():
            return [subagent_ended(event)] if subagents else []
        case PermissionResolved() | TurnEnded() | InputQueued():
            return []
        case _:
            assert_never(event)


def plan_updates(event: PlanUpdated, *, plans: bool) -> list[Update]:
    """A plan for a client that takes plans by id (``plan_update``: the steps as items, the approved proposal as
    Markdown; ``plan_removed`` for steps cleared), else today's ``plan`` with the complete steps (a proposal is
    shown in its tool call's card only)."""
    entries = [{"content": e.content, "priority": e.priority, "status": e.status} for e in event.entries]
    if not plans:
        return [] if event.markdown is not None else [{"sessionUpdate": "plan", "entries": entries}]
    if event.markdown is not None:
        plan: Update = {"type": "markdown", "planId": event.plan_id, "content": event.markdown}
    elif entries:
        plan = {"type": "items", "planId": event.plan_id, "entries": entries}
    else:
        return [{"sessionUpdate": "plan_removed", "planId": event.plan_id}]
    return [{"sessionUpdate": "plan_update", "plan": plan}]


def session_message_chunks(event: UserPrompted) -> list[Update]:
    """A task its parent sent a session, on v1: the child's incoming ``session_message`` naming the sender, then its
    content as ``session_message_chunk``s, one per block."""
    upsert: Update = {
        "sessionUpdate": "session_message",
        "messageId": event.message_id,
        "senderSessionId": event.sender_session_id,
    }
    chunks = [
        {"sessionUpdate": "session_message_chunk", "messageId": event.message_id, "content": content_block(b)}
        for b in event.display
    ]
    return [upsert, *chunks]


def session_message(event: UserPrompted) -> Update:
    """A task its parent sent a session, as the child's incoming ``session_message`` with its whole content (v2)."""
    return {
        "sessionUpdate": "session_message",
        "messageId": event.message_id,
        "senderSessionId": event.sender_session_id,
        "content": [content_block(b) for b in event.display],
    }


def subagent_announced(event: SubagentStarted) -> list[Update]:
    """On the parent: the child announced (``subagent_update``, before any of its traffic: running, cancellable),
    and the ``delegate`` card linked to it (ACP 2.4.0 has no ``session`` tool-call content yet: the link is the
    card's ``_meta``)."""
    announce: Update = {
        "sessionUpdate": "subagent_update",
        "sessionId": event.session_id,
        "title": event.title,
        "description": event.description,
        "cwd": event.cwd,
        "capabilities": {"cancel": {}},
        "state": {"state": "running"},
        "_meta": {"hermes": {"toolCallId": event.tool_call_id, "role": event.role, "model": event.model_id}},
    }
    if event.additional_directories:
        announce["additionalDirectories"] = event.additional_directories
    link: Update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": event.tool_call_id,
        "_meta": {"hermes": {"session": {"sessionId": event.session_id}}},
    }
    return [announce, link]


def subagent_ended(event: SubagentEnded) -> Update:
    """On the parent: the child idle for good, with how it stopped and what it used; it takes no more cancels."""
    state: dict[str, Any] = {"state": "idle"}
    if event.outcome in ("failed", "unknown") or event.stop_reason is None:
        state["stopReason"] = "error"
        state["error"] = {"code": -32603, "message": event.error or event.outcome}
    else:
        state["stopReason"] = event.stop_reason
    if event.usage != Usage():
        state["usage"] = usage_json(event.usage)
    meta = {"hermes": {"toolCallId": event.tool_call_id, "outcome": event.outcome}}
    return {
        "sessionUpdate": "subagent_update",
        "sessionId": event.session_id,
        "capabilities": None,
        "state": state,
        "_meta": meta,
    }


def usage_json(usage: Usage) -> dict[str, int]:
    """ACP's ``Usage``: token counts of one prompt (or a child's work)."""
    return {
        "totalTokens": usage.input_tokens + usage.output_tokens,
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "thoughtTokens": usage.thought_tokens,
        "cachedReadTokens": usage.cached_read_tokens,
        "cachedWriteTokens": usage.cache_write_tokens,
    }


_WHY = {
    "threshold": "it neared the context window",
    "overflow": "the model refused it as too long for its context window",
    "manual": "as asked",
}


def compaction_note(event: ContextCompacted) -> str:
    """One short paragraph: that the conversation was compacted, why, how much, and what the model no longer sees."""
    what: list[str] = []
    if event.method == "summary":
        what.append(f"the {event.replaced} earliest messages were summarised by {event.model_id}")
    elif event.method == "dropped":
        what.append(
            f"summarising the {event.replaced} earliest messages failed ({event.error}), so they were dropped: the"
            " model no longer sees them"
        )
    if event.stubs:
        count = len(event.stubs)
        what.append(f"{count} large tool result{'s were' if count > 1 else ' was'} cut to a short stub")
    return (
        f"Compacted the conversation ({_WHY[event.trigger]}): {event.tokens_before:,} → {event.tokens_after:,} tokens;"
        f" {'; '.join(what)}. The full history stays in this session's transcript."
    )


def compaction_summary(event: ContextCompacted) -> str:
    """What a client that renders compactions shows as the summary: the model's summary, then the note."""
    note = compaction_note(event)
    return f"{event.summary}\n\n{note}" if event.summary else note


def live_update(
    update: LiveUpdate,
    *,
    compaction: bool = False,
    terminal_cards: bool = False,
    subagents: bool = False,
    terminal_delta: bool = False,
) -> Update | None:
    """The ``session/update`` for ``update``; None when the client cannot show it (compaction updates to a client
    without ``session.compaction``, a child's state to one without ``subagents``). A terminal's output is
    ``_meta.terminal_output`` for a client with ``terminal_cards``, its text view for any other."""
    match update:
        case LiveSubagentState():
            if not subagents:
                return None
            return {
                "sessionUpdate": "subagent_update",
                "sessionId": update.session_id,
                "state": {"state": update.state},
            }
        case LiveTextChunk():
            return _chunk("agent_message_chunk", update.text, update.message_id)
        case LiveThoughtChunk():
            return _chunk("agent_thought_chunk", update.text, update.message_id)
        case LiveToolProgress():
            progress: Update = {
                "sessionUpdate": "tool_call_update",
                "toolCallId": update.tool_call_id,
                "status": "in_progress",
            }
            if update.content is not None:
                progress["content"] = tool_content(update.content)
            return progress
        case LiveTerminalOutput():
            if terminal_cards:
                meta = zed_meta(terminal_events(update), delta=terminal_delta)
                if meta is None:
                    return None
                return {"sessionUpdate": "tool_call_update", "toolCallId": update.tool_call_id, "_meta": meta}
            return {
                "sessionUpdate": "tool_call_update",
                "toolCallId": update.tool_call_id,
                "status": "in_progress",
                "content": tool_content(update.fallback),
            }
        case LiveCompaction():
            if not compaction:
                return None
            return _drop_none(
                {
                    "sessionUpdate": "compaction_update",
                    "compactionId": update.compaction_id,
                    "status": update.status,
                    "error": update.error,
                }
            )
        case LiveCompactionChunk():
            if not compaction:
                return None
            return {
                "sessionUpdate": "compaction_summary_chunk",
                "compactionId": update.compaction_id,
                "content": _text(update.text),
            }
        case LiveUsage():
            return usage_update(update)
        case LiveCancelOpen():
            return None  # v1 has no per-call cancel
        case _:
            assert_never(update)


def usage_update(update: LiveUsage) -> Update:
    """The context meter (``usage_update``), the same on v1 and v2: tokens in the context, the window, the cost when
    the models have prices, and ``[budget]``'s caps in ``_meta.hermes.budget``."""
    meter: Update = {"sessionUpdate": "usage_update", "used": update.used, "size": update.size}
    if update.cost is not None:
        meter["cost"] = cost_json(update.cost)
    if update.budget:
        meter["_meta"] = {"hermes": {"budget": budget_json(update.budget)}}
    return meter


def cost_json(cost: Cost) -> dict[str, Any]:
    """A cost as ACP carries one (``usage_update.cost``; ``_meta.hermes.cost`` of a prompt's end)."""
    return {"amount": cost.amount, "currency": cost.currency}


def budget_json(caps: Sequence[CapStatus]) -> dict[str, Any]:
    """``[budget]``'s caps as ``usage_update._meta.hermes.budget`` carries them: by key, the unit, the limit, what
    is spent and left, and whether the session's switch lifted it."""
    return {
        cap.key: {"unit": cap.unit, "limit": cap.limit, "spent": cap.spent, "left": cap.left, "lifted": cap.lifted}
        for cap in caps
    }


def notice_update(notice: Notice) -> Update:
    """A ``notice`` update (only for clients that advertised ``session.notices``; never stored or replayed)."""
    return _drop_none(
        {
            "sessionUpdate": "notice",
            "severity": notice.severity,
            "title": notice.title,
            "description": notice.description,
        }
    )


def _user_chunks(display: list[DisplayBlock], message_id: str) -> list[Update]:
    return [
        {"sessionUpdate": "user_message_chunk", "content": content_block(b), "messageId": message_id} for b in display
    ]


def _chunk(kind: str, text: str, message_id: str) -> Update:
    return {"sessionUpdate": kind, "content": _text(text), "messageId": message_id}


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}
