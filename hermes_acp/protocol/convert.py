"""Pure conversions between ACP wire shapes and our neutral types.

- prompt content blocks → ``DisplayBlock``s (what the user sent, stored verbatim for replay);
- stored session events → ``session/update`` payloads, one ``match`` over the event union. The same function
  renders a live turn and a ``session/load`` replay; ``live=True`` only skips what was already streamed as
  chunks (the assistant's text and thoughts) and the user's own prompt, which the client shows itself;
- transient live updates → ``session/update`` payloads.
No I/O here.
"""

from __future__ import annotations

from typing import assert_never

from acp import schema

from hermes_acp.core import (
    AssistantMessageStored,
    AssistantTextCheckpointed,
    AudioBlock,
    DiffBlock,
    DisplayBlock,
    ImageBlock,
    Location,
    NoticeAdded,
    PermissionResolved,
    PlanUpdated,
    ResourceBlock,
    ResourceLinkBlock,
    SessionEvent,
    TerminalBlock,
    TextBlock,
    TextPart,
    ThinkingPart,
    TitleSet,
    ToolCallRunning,
    ToolCallSettled,
    ToolCallStarted,
    TurnEnded,
    UserPrompted,
)
from hermes_acp.turns.ports import LiveTextChunk, LiveThoughtChunk, LiveToolProgress, LiveUpdate

__all__ = [
    "SessionUpdate",
    "content_block",
    "event_updates",
    "live_update",
    "prompt_to_display",
    "tool_content",
    "tool_locations",
]

PromptBlock = (
    schema.TextContentBlock
    | schema.ImageContentBlock
    | schema.AudioContentBlock
    | schema.ResourceContentBlock
    | schema.EmbeddedResourceContentBlock
)
SessionUpdate = (
    schema.UserMessageChunk
    | schema.AgentMessageChunk
    | schema.AgentThoughtChunk
    | schema.ToolCallStart
    | schema.ToolCallProgress
    | schema.AgentPlanUpdate
    | schema.SessionInfoUpdate
    | schema.UsageUpdate
)
ToolContent = schema.ContentToolCallContent | schema.FileEditToolCallContent | schema.TerminalToolCallContent


def prompt_to_display(blocks: list[PromptBlock]) -> list[DisplayBlock]:
    out: list[DisplayBlock] = []
    for block in blocks:
        if isinstance(block, schema.TextContentBlock):
            out.append(TextBlock(text=block.text))
        elif isinstance(block, schema.ImageContentBlock):
            out.append(ImageBlock(media_type=block.mime_type, data=block.data, uri=block.uri))
        elif isinstance(block, schema.AudioContentBlock):
            out.append(AudioBlock(media_type=block.mime_type, data=block.data))
        elif isinstance(block, schema.ResourceContentBlock):
            out.append(ResourceLinkBlock(uri=block.uri, name=block.name, media_type=block.mime_type))
        else:
            resource = block.resource
            if isinstance(resource, schema.TextResourceContents):
                out.append(ResourceBlock(uri=resource.uri, media_type=resource.mime_type, text=resource.text))
            else:
                out.append(ResourceBlock(uri=resource.uri, media_type=resource.mime_type, blob=resource.blob))
    return out


def content_block(block: DisplayBlock) -> PromptBlock:
    """A display block as an ACP content block (diffs and terminals become text here)."""
    match block:
        case TextBlock():
            return schema.TextContentBlock(type="text", text=block.text)
        case ImageBlock():
            return schema.ImageContentBlock(type="image", data=block.data, mime_type=block.media_type, uri=block.uri)
        case AudioBlock():
            return schema.AudioContentBlock(type="audio", data=block.data, mime_type=block.media_type)
        case ResourceLinkBlock():
            return schema.ResourceContentBlock(
                type="resource_link", uri=block.uri, name=block.name, mime_type=block.media_type
            )
        case ResourceBlock():
            contents: schema.TextResourceContents | schema.BlobResourceContents
            if block.text is not None:
                contents = schema.TextResourceContents(uri=block.uri, mime_type=block.media_type, text=block.text)
            else:
                contents = schema.BlobResourceContents(uri=block.uri, mime_type=block.media_type, blob=block.blob or "")
            return schema.EmbeddedResourceContentBlock(type="resource", resource=contents)
        case DiffBlock():
            return schema.TextContentBlock(type="text", text=f"diff {block.path}")
        case TerminalBlock():
            return schema.TextContentBlock(type="text", text=f"terminal {block.terminal_id}")
        case _:
            assert_never(block)


def tool_content(blocks: list[DisplayBlock]) -> list[ToolContent]:
    out: list[ToolContent] = []
    for block in blocks:
        if isinstance(block, DiffBlock):
            out.append(
                schema.FileEditToolCallContent(
                    type="diff", path=block.path, old_text=block.old_text, new_text=block.new_text
                )
            )
        elif isinstance(block, TerminalBlock):
            out.append(schema.TerminalToolCallContent(type="terminal", terminal_id=block.terminal_id))
        else:
            out.append(schema.ContentToolCallContent(type="content", content=content_block(block)))
    return out


def tool_locations(locations: list[Location]) -> list[schema.ToolCallLocation] | None:
    return [schema.ToolCallLocation(path=loc.path, line=loc.line) for loc in locations] or None


def event_updates(event: SessionEvent, *, live: bool) -> list[SessionUpdate]:
    match event:
        case UserPrompted():
            if live:
                return []
            return [
                schema.UserMessageChunk(
                    session_update="user_message_chunk", content=content_block(b), message_id=event.message_id
                )
                for b in event.display
            ]
        case AssistantMessageStored():
            updates: list[SessionUpdate] = []
            if not live:
                thought = "".join(p.text for p in event.message.parts if isinstance(p, ThinkingPart) and p.text)
                text = "".join(p.text for p in event.message.parts if isinstance(p, TextPart))
                if thought:
                    updates.append(
                        schema.AgentThoughtChunk(
                            session_update="agent_thought_chunk",
                            content=schema.TextContentBlock(type="text", text=thought),
                            message_id=event.message_id,
                        )
                    )
                if text:
                    updates.append(
                        schema.AgentMessageChunk(
                            session_update="agent_message_chunk",
                            content=schema.TextContentBlock(type="text", text=text),
                            message_id=event.message_id,
                        )
                    )
            if event.usage is not None and event.context_window:
                updates.append(
                    schema.UsageUpdate(
                        session_update="usage_update",
                        used=event.usage.input_tokens,
                        size=event.context_window,
                    )
                )
            return updates
        case AssistantTextCheckpointed():
            if live:  # streamed already
                return []
            return [
                *_chunks(schema.AgentThoughtChunk, "agent_thought_chunk", event.thinking, event.message_id),
                *_chunks(schema.AgentMessageChunk, "agent_message_chunk", event.text, event.message_id),
            ]
        case ToolCallRunning():
            return [
                schema.ToolCallProgress(
                    session_update="tool_call_update", tool_call_id=event.tool_call_id, status="in_progress"
                )
            ]
        case ToolCallStarted():
            return [
                schema.ToolCallStart(
                    session_update="tool_call",
                    tool_call_id=event.tool_call_id,
                    title=event.title,
                    kind=event.tool_kind,
                    status="pending",
                    raw_input=event.raw_input,
                    locations=tool_locations(event.locations),
                    content=tool_content(event.content) or None,
                )
            ]
        case ToolCallSettled():
            return [
                schema.ToolCallProgress(
                    session_update="tool_call_update",
                    tool_call_id=event.tool_call_id,
                    status=event.status,
                    content=tool_content(event.content),
                    raw_output=event.raw_output,
                )
            ]
        case PlanUpdated():
            return [
                schema.AgentPlanUpdate(
                    session_update="plan",
                    entries=[
                        schema.PlanEntry(content=e.content, priority=e.priority, status=e.status) for e in event.entries
                    ],
                )
            ]
        case NoticeAdded():
            return [
                schema.AgentMessageChunk(
                    session_update="agent_message_chunk",
                    content=schema.TextContentBlock(type="text", text=event.text),
                    message_id=event.message_id,
                )
            ]
        case TitleSet():
            return [schema.SessionInfoUpdate(session_update="session_info_update", title=event.title)]
        case PermissionResolved() | TurnEnded():
            return []
        case _:
            assert_never(event)


def _chunks(
    kind: type[schema.AgentThoughtChunk] | type[schema.AgentMessageChunk],
    update: str,
    text: str,
    message_id: str,
) -> list[SessionUpdate]:
    if not text:
        return []
    return [kind(session_update=update, content=schema.TextContentBlock(type="text", text=text), message_id=message_id)]


def live_update(update: LiveUpdate) -> SessionUpdate:
    match update:
        case LiveTextChunk():
            return schema.AgentMessageChunk(
                session_update="agent_message_chunk",
                content=schema.TextContentBlock(type="text", text=update.text),
                message_id=update.message_id,
            )
        case LiveThoughtChunk():
            return schema.AgentThoughtChunk(
                session_update="agent_thought_chunk",
                content=schema.TextContentBlock(type="text", text=update.text),
                message_id=update.message_id,
            )
        case LiveToolProgress():
            content = tool_content(update.content) if update.content is not None else None
            return schema.ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=update.tool_call_id,
                status="in_progress",
                content=content,
            )
        case _:
            assert_never(update)
