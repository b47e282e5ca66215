"""Steering: messages for the turn a session is running, applied at its next safe point.

``SteeringQueue`` is the session's steering inbox (the turn loop's ``SteeringInbox`` port). A session opens it for
each model turn and closes it when the turn ends; while it is open, a steering message (``_session/steering``, the
extension claude-agent-acp and codex-acp answer) is stored as queued (``InputQueued``) and then offered to it, and
the turn loop takes what waits at its safe points (``hermes_acp.turns.loop``). Offering names the turn the message
was stored for, so a message stored while that turn ended is never handed to the next one: the session then falls
back to the idle behaviour the client asked for (a new turn, or ``promptRequired``: the client sends it as a prompt).
What waits is bounded (``sessions.waiting``): ``admitting`` refuses a message that would take the waiting ones past
the limit, before it is stored, and holds its room while it is stored, so messages stored side by side cannot pass
the limit together; the turn takes them all at its next safe point, so its next model request holds no more.

Everything here runs on the event loop and never awaits, so "is a turn taking steering?" and "hand it this message"
cannot be separated by another task's step. It knows the port, not ACP.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import count
from typing import Literal

from hermes_acp.core import DisplayBlock
from hermes_acp.turns.ports import Steer

from .waiting import WAITING_STEERING, WaitLimit

__all__ = ["IdleBehavior", "SteerOutcome", "SteeringQueue"]

SteerOutcome = Literal["injected", "startedNewTurn", "promptRequired"]
"""What became of a steering message: added to the running turn; a new turn started with it (no turn was running);
or handed back, when the client asked for that (``idleBehavior: "promptRequired"``)."""
IdleBehavior = Literal["startNewTurn", "promptRequired"]


class SteeringQueue:
    """The steering messages waiting for the running turn (see the module docstring)."""

    def __init__(self, limit: WaitLimit = WAITING_STEERING) -> None:
        self._limit = limit
        self._turn_id: str | None = None
        self._waiting: list[Steer] = []
        self._storing: dict[int, Sequence[DisplayBlock]] = {}
        """Messages admitted and being stored as queued, by ticket: they count as waiting."""
        self._tickets = count()

    @property
    def turn_id(self) -> str | None:
        """The turn taking steering messages now; None between turns (and once a turn decided to end)."""
        return self._turn_id

    @property
    def waiting(self) -> tuple[Steer, ...]:
        return tuple(self._waiting)

    def open(self, turn_id: str) -> SteeringQueue:
        """Take steering messages for ``turn_id`` until it closes the queue."""
        self._turn_id = turn_id
        self._waiting = []
        return self

    @contextmanager
    def admitting(self, display: Sequence[DisplayBlock]) -> Iterator[None]:
        """Room for ``display`` among the waiting messages while it is stored (``InvalidParamsError`` naming the
        limit when there is none); ``offer`` then adds it to them, and the room is given back on the way out."""
        self._limit.check([*(steer.display for steer in self._waiting), *self._storing.values()], display)
        ticket = next(self._tickets)
        self._storing[ticket] = display
        try:
            yield
        finally:
            del self._storing[ticket]

    def offer(self, turn_id: str, steer: Steer) -> bool:
        """Hand ``steer`` to the running turn; False when ``turn_id`` no longer takes any (it ended, or decided to)."""
        if self._turn_id is None or self._turn_id != turn_id:
            return False
        self._waiting.append(steer)
        return True

    # -- the turn loop's side (``SteeringInbox``) ------------------------------------------------------------

    def take(self) -> list[Steer]:
        taken, self._waiting = self._waiting, []
        return taken

    def close_if_empty(self) -> bool:
        if self._waiting:
            return False
        self._turn_id = None
        return True

    def close(self) -> list[Steer]:
        left, self._waiting = self._waiting, []
        self._turn_id = None
        return left
