"""One connection attached to a session, as the audience keeps it: its sink, the backlog of what arrived live while it
caught up, the bound on each send, and once a send waited out that bound, its stall and its held delivery cursor.

A member that stalled gets nothing more live until the turn ends; the sink it is sent through from then on keeps its
cursor at the last stored event it was actually given, so a rejoin by that cursor replays what it missed (stored
events are numbered without gaps per session). This module knows nothing of questions, catch-up or the session.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import structlog

from hermes_acp.core import SessionEvent
from hermes_acp.core.notice import Notice
from hermes_acp.turns.ports import LiveUpdate, UpdateSink

from .views import ClientBridge

__all__ = ["MEMBER_SEND_S", "HeldCursor", "Member", "Send", "Tried"]

MEMBER_SEND_S = 5.0
"""Longest wait for one connection to take one update; past it that connection is stalled until the turn ends."""
Send = Callable[[UpdateSink], Awaitable[Any]]
"""One update's sending, given the sink of the connection it goes to."""
_log = structlog.get_logger("hermes_acp.sessions")


@dataclass(eq=False)
class Member:
    client: ClientBridge
    sink: UpdateSink
    backlog: list[Send] | None = None
    """While it catches up: what arrived live meanwhile, sent once the history is."""
    stalled: bool = False
    held: HeldCursor | None = None
    """Once it stalled: the sink it is sent through from then on, which keeps its cursor at the last stored event
    it was given (it missed the ones after: a rejoin by that cursor replays them)."""
    timeout_s: float = MEMBER_SEND_S

    async def deliver(self, send: Send) -> None:
        if self.backlog is not None:
            self.backlog.append(send)
        elif not self.stalled:
            await self._send(send)

    async def _send(self, send: Send) -> None:
        sink = self.held or Tried(self.sink)
        with anyio.move_on_after(self.timeout_s) as sending:
            await send(sink)
        if sending.cancelled_caught:
            self.stalled = True
            if self.held is None:  # seqs are contiguous: it was given every stored event before the one it stalled on
                tried = sink.seq if isinstance(sink, Tried) else None
                self.held = HeldCursor(self.sink, None if tried is None else tried - 1)
            _log.warning(
                "a client stopped taking updates; the rest of this turn is not sent to it live",
                connection=self.client.connection_id,
            )


@dataclass(eq=False)
class Tried:
    """A member's sink for one send; ``seq``: the stored event that send tried to pass (None: no stored event)."""

    sink: UpdateSink
    seq: int | None = None

    async def emit_event(self, event: SessionEvent, *, live: bool, seq: int | None = None) -> None:
        self.seq = seq if seq is not None else self.seq
        await self.sink.emit_event(event, live=live, seq=seq)

    async def emit_live(self, update: LiveUpdate) -> None:
        await self.sink.emit_live(update)

    async def notice(self, notice: Notice) -> bool:
        return await self.sink.notice(notice)


@dataclass(eq=False)
class HeldCursor:
    """The sink of a member that missed stored events: each event it is still sent names ``given`` (the last one it
    was given; None: leave the cursor as it was) instead of its own seq, so its cursor never claims the gap."""

    sink: UpdateSink
    given: int | None

    async def emit_event(self, event: SessionEvent, *, live: bool, seq: int | None = None) -> None:
        await self.sink.emit_event(event, live=live, seq=self.given if seq is not None else None)

    async def emit_live(self, update: LiveUpdate) -> None:
        await self.sink.emit_live(update)

    async def notice(self, notice: Notice) -> bool:
        return await self.sink.notice(notice)
