"""A session's timeline: the events of its log that still count once its rewinds are taken into account.

The log is append-only (docs/architecture.md §4.12); a rewind (``Rewound``) is one more event, which says that the
user message ``to_message_id`` and everything after it, up to the rewind, no longer belong to the conversation.
``effective`` walks the log in order and applies each rewind to what it has kept so far, so rewinds after rewinds
(``/undo`` twice) and rewinds to a point before an earlier rewind fold the same way, live and after a reload. Kept
through a cut: the titles (a rewind does not rename the session) and the queued prompts still waiting when the
rewind happened (they are resolved after it). ``project`` folds a timeline into the projection the turn loop reads.
``user_prompts`` lists the points a rewind can go back to; ``fork_point`` where a fork at a message ends. Pure; no
I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from hermes_acp.core import (
    AssistantMessageStored,
    ContextCompacted,
    InputDropped,
    InputQueued,
    NoticeAdded,
    PermissionResolved,
    Rewound,
    SessionEvent,
    SteeringApplied,
    TextBlock,
    TitleSet,
    ToolCallRunning,
    ToolCallSettled,
    ToolCallStarted,
    UserPrompted,
)

from .projection import SessionProjection

__all__ = ["RewindPoint", "effective", "effective_events", "fork_point", "project", "user_prompts"]

T = TypeVar("T")


def effective(items: Sequence[T], event_of: Callable[[T], SessionEvent]) -> list[T]:
    """The items of ``items`` (events, or stored events with their sequence numbers) whose events still count."""
    kept: list[T] = []
    starts: dict[str, int] = {}
    """A user prompt's message id → its index in ``kept``."""
    for item in items:
        event = event_of(item)
        if isinstance(event, Rewound):
            at = starts.get(event.to_message_id)
            if at is not None:
                kept = kept[:at] + _surviving(kept[at:], event_of)
                starts = {message_id: index for message_id, index in starts.items() if index < at}
        elif isinstance(event, UserPrompted):
            starts[event.message_id] = len(kept)
        kept.append(item)
    return kept


def _surviving(cut: list[T], event_of: Callable[[T], SessionEvent]) -> list[T]:
    """What of a cut part stays: its titles, and the queued inputs that it does not resolve."""
    resolved = set()
    for item in cut:
        event = event_of(item)
        if isinstance(event, UserPrompted | SteeringApplied | InputDropped) and event.input_id is not None:
            resolved.add(event.input_id)
    return [
        item
        for item in cut
        if isinstance(event_of(item), TitleSet)
        or (isinstance(queued := event_of(item), InputQueued) and queued.input_id not in resolved)
    ]


def effective_events(events: Sequence[SessionEvent]) -> list[SessionEvent]:
    return effective(events, lambda event: event)


def project(events: Sequence[SessionEvent]) -> SessionProjection:
    """The projection of a session's log: its timeline, folded."""
    projection = SessionProjection()
    for event in effective_events(events):
        projection.apply(event)
    return projection


@dataclass(frozen=True, slots=True)
class RewindPoint:
    """A user prompt of the timeline that a rewind can go back to (the model saw it)."""

    message_id: str
    text: str
    """What the user typed (text blocks only), for listings."""
    index: int
    """Its position in the timeline (the events before it are what a rewind to it keeps)."""


def user_prompts(events: Sequence[SessionEvent]) -> list[RewindPoint]:
    """The prompts of a timeline (``effective_events``) a rewind can go back to, oldest first: those the model got."""
    return [
        RewindPoint(event.message_id, "".join(b.text for b in event.display if isinstance(b, TextBlock)), index)
        for index, event in enumerate(events)
        if isinstance(event, UserPrompted) and event.for_model
    ]


_WITH_MESSAGE_ID = (
    UserPrompted,
    AssistantMessageStored,
    NoticeAdded,
    SteeringApplied,
    InputDropped,
    Rewound,
    ContextCompacted,
)


_OF_CALL = (ToolCallStarted, ToolCallRunning, ToolCallSettled, PermissionResolved)


def fork_point(events: Sequence[SessionEvent], message_id: str) -> int | None:
    """The index of the last event of ``events`` (a timeline) that a fork at ``message_id`` keeps: the event that
    carries the message (inclusive), and for an agent message with tool calls, the events of those calls up to their
    results. None when no event of the timeline carries it."""
    at = next(
        (i for i, e in enumerate(events) if isinstance(e, _WITH_MESSAGE_ID) and e.message_id == message_id),
        None,
    )
    if at is None:
        return None
    message = events[at]
    if not isinstance(message, AssistantMessageStored) or not message.message.tool_calls:
        return at
    calls = {call.id for call in message.message.tool_calls}
    last = at
    for index in range(at + 1, len(events)):
        event = events[index]
        call_id = event.tool_call_id if isinstance(event, _OF_CALL) else None
        if call_id in calls:
            last = index
    return last
