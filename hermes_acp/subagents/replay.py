"""``ChildReplay``: a child's log where its parent's replay reaches the child's ``SubagentStarted``, rendered in place.

``expand`` takes the parent's log and puts each child's log right after its ``SubagentStarted`` (theirs in theirs,
to ``MAX_REPLAY_DEPTH``): a live child's as it stands with what it streamed that is not stored yet, a finished
child's from the store, a child cut short by a crash repaired first (its open work is "outcome unknown", never run
again). The replay shows a client that advertised ``subagents`` the child's traffic under the child's id; any other
the child's steps on the parent's ``delegate`` card. It knows the store and the views, not the session or ACP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import structlog

from hermes_acp.core import SessionEvent, SubagentStarted
from hermes_acp.storage.base import SessionStore, StoredEvent
from hermes_acp.turns.ports import LiveToolProgress, LiveUpdate, UpdateSink
from hermes_acp.turns.projection import SessionProjection, transcript_events
from hermes_acp.turns.recovery import recovery_events

from .lineage import RunningChild
from .relay import progress_content, progress_lines
from .view import Viewer

__all__ = ["MAX_REPLAY_DEPTH", "ChildReplay", "expand"]

MAX_REPLAY_DEPTH = 8
"""Nesting a replay follows at most (``[agent] subagent_depth`` allows 4; a hand-written log could loop)."""
_log = structlog.get_logger("hermes_acp.sessions")


@dataclass(frozen=True, slots=True)
class ChildReplay:
    """A child's log where its parent's replay reaches its ``SubagentStarted`` (its own children's in place too)."""

    session_id: str
    tool_call_id: str
    items: Sequence[SessionEvent | StoredEvent | ChildReplay]
    tail: Sequence[LiveUpdate] = ()
    """What a running child streamed that is not in its log yet."""

    async def replay(self, client: Viewer, sink: UpdateSink) -> None:
        """With ``subagents``: the child's traffic under its own id; without: its steps on the ``delegate`` card
        (``sink`` is the client's sink for the parent; a grandchild's steps are not shown there)."""
        if client.subagents:
            child = client.sink(self.session_id)
            events = [_event(item) for item in self.items if not isinstance(item, ChildReplay)]
            shown = {id(event) for event in transcript_events(events)}
            for item in self.items:
                if isinstance(item, ChildReplay):
                    await item.replay_nested(client, child)
                elif id(_event(item)) in shown:
                    seq = item.seq if isinstance(item, StoredEvent) else None
                    await child.emit_event(_event(item), live=False, seq=seq)
            for update in self.tail:
                await child.emit_live(update)
            return
        lines = progress_lines([_event(item) for item in self.items if not isinstance(item, ChildReplay)])
        if lines:
            await sink.emit_live(LiveToolProgress(self.tool_call_id, progress_content(lines)))

    async def replay_nested(self, client: Viewer, sink: UpdateSink) -> None:
        """A grandchild's, inside its parent's replay: shown only to a client that shows child sessions."""
        if client.subagents:
            await self.replay(client, sink)


def _event(item: SessionEvent | StoredEvent) -> SessionEvent:
    return item.event if isinstance(item, StoredEvent) else item


async def expand(
    store: SessionStore,
    events: Sequence[SessionEvent | StoredEvent],
    running: Mapping[str, RunningChild],
    *,
    depth: int = 0,
) -> list[SessionEvent | StoredEvent | ChildReplay]:
    """``events`` (stored ones with their seqs, or bare) with each child's log in place, right after its
    ``SubagentStarted`` (``running``: the children live now, by session id). Call it while their writes are held."""
    out: list[SessionEvent | StoredEvent | ChildReplay] = []
    for item in events:
        out.append(item)
        event = item.event if isinstance(item, StoredEvent) else item
        if isinstance(event, SubagentStarted) and depth < MAX_REPLAY_DEPTH:
            replayed = await _child_replay(store, event, running.get(event.session_id), depth=depth)
            if replayed is not None:
                out.append(replayed)
    return out


async def _child_replay(
    store: SessionStore, started: SubagentStarted, running: RunningChild | None, *, depth: int
) -> ChildReplay | None:
    child_events = await store.load_events(started.session_id)
    live = running.session if running is not None else None
    if live is not None:
        items = await expand(store, child_events, live.subagents.running, depth=depth + 1)
        return ChildReplay(started.session_id, started.tool_call_id, items, live.audience.tail())
    if not child_events and await store.get_session(started.session_id) is None:
        return None  # the server stopped between the record and the event: there is nothing to show
    projection = SessionProjection()
    for stored in child_events:
        projection.apply(stored.event)
    repairs = recovery_events(projection)
    if repairs:
        _log.info("repairing an interrupted subagent", session_id=started.session_id, events=len(repairs))
        child_events.extend(await store.append_events(started.session_id, repairs))
    items = await expand(store, child_events, {}, depth=depth + 1)
    return ChildReplay(started.session_id, started.tool_call_id, items)
