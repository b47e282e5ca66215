"""``PromptQueue``: one session's prompts, one at a time (docs/architecture.md §4.11).

Each prompt (a model turn, a slash command, a subagent's task) is queued with its cancel scope before its caller's
first await (or refused, past the limits on what waits: ``sessions.waiting``), and runs in a task of the session's
own (in the host's task group, not in the request that sent it), in turn, on a FIFO lock (``lock``: a rewind and the
report of the MCP servers take it too); so a second prompt is answered when its own turn ends, and a turn goes on
when the connection that sent it leaves (a session host). One that has to wait for the turn before it is stored as
queued (``InputQueued``) first; one cancelled before its turn came is stored as not run. While it runs, the
audience's ``origin`` is the connection that sent it (its files and terminals). ``cancel`` cancels the running
prompt and everything queued, or those of one connection (docs/architecture.md §4.10); the next prompt is accepted
at once.

Each prompt is a ``Ticket`` (``put``): its message id is chosen when it is queued, so the caller can wait for the
prompt to be inserted (its ``UserPrompted`` stored: ``prompted``, which the recorder calls) rather than for its end,
as ACP v2 answers ``session/prompt``; ``withdraw`` takes back one that has not started (v2's ``$/cancel_request``
for a held prompt). The audience is told where the foreground work stands (``Audience.foreground``): running when a
prompt starts, idle with how it ended (its stop reason, usage, and the error of one that failed after it was
inserted) when it ends; a command answered at once while another prompt runs (``now``) is no foreground work.

It knows what runs only as a callable given the ids the prompt was stored as queued with and will be stored with;
not the commands, the turn loop or ACP.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog

from hermes_acp.core import DisplayBlock, InputQueued, UserPrompted
from hermes_acp.core.ids import new_input_id, new_message_id
from hermes_acp.errors import StorageError
from hermes_acp.turns.recorder import Recorder
from hermes_acp.turns.settlements import dropped_input

from .audience import Audience
from .views import ClientBridge, Foreground, PromptResult, QueuedInput
from .waiting import QUEUED_PROMPTS

__all__ = ["PromptQueue", "Spawn", "Ticket", "Work"]

_log = structlog.get_logger("hermes_acp.sessions")


Work = Callable[[str | None, str], Coroutine[Any, Any, PromptResult]]
"""What a queued prompt runs once its turn comes, given the id it was stored as queued with (None: it did not wait)
and the message id its prompt is to be stored with."""
Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]], str], None]
"""Starts a task in the host's task group (the session's prompts run there)."""


@dataclass(eq=False)
class Ticket:
    """One prompt in the queue: its cancel scope, the connection that sent it, and how it ended (the session
    layer's ``PromptTicket``)."""

    origin: ClientBridge | None
    display: list[DisplayBlock]
    input_id: str | None = None
    """Set when it is (or is being) stored as queued (``InputQueued``)."""
    stored: anyio.Event = field(default_factory=anyio.Event)
    """Set once it may start: stored as queued, or never needed to be."""
    queued_in_log: bool = False
    started: bool = False
    shown_by_origin: bool = True
    """False for a prompt its connection did not send as one (a steering message that started a turn)."""
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    outcome: PromptResult | None = None
    error: Exception | None = None
    message_id: str = field(default_factory=new_message_id)
    """The id its prompt is stored with (a command's line too)."""
    stored_prompt: anyio.Event = field(default_factory=anyio.Event)
    """Set once its prompt is in the log."""

    async def inserted(self) -> bool:
        """True once the prompt is in the log; False when it ended without (cancelled or withdrawn before it
        started); the error that stopped it before it was inserted is raised."""
        async with anyio.create_task_group() as group:

            async def first(event: anyio.Event) -> None:
                await event.wait()
                group.cancel_scope.cancel()

            group.start_soon(first, self.stored_prompt)
            group.start_soon(first, self.done)
        if self.stored_prompt.is_set():
            return True
        if self.error is not None:
            raise self.error
        return False

    async def result(self) -> PromptResult:
        """How the prompt ended (``cancelled`` for one that never ran); its error raised."""
        await self.done.wait()
        if self.error is not None:
            raise self.error
        return self.outcome or PromptResult(stop_reason="cancelled")

    def withdraw(self) -> bool:
        """Take it back when it has not started: True when it was (it will not run), False when it runs already."""
        if self.started:
            return False
        self.scope.cancel()
        return True


SETTLE_S = 5.0
"""Longest wait for the running prompt to end once it was cancelled (``settled``)."""


def _ended(ticket: Ticket) -> Foreground:
    """The idle state a prompt leaves: how it ended, with the error that stopped it, or the failure it ended on."""
    outcome = ticket.outcome
    if outcome is None:
        return Foreground("idle", "cancelled" if ticket.error is None else None, failure=ticket.error)
    ended_on = outcome.failure
    failure = ended_on if ended_on is not None and ended_on.is_error else None
    limit = ended_on if ended_on is not None and not ended_on.is_error else None
    return Foreground("idle", outcome.stop_reason, outcome.usage, failure=failure, limit=limit, cost=outcome.cost)


class PromptQueue:
    """One session's prompts (see the module docstring); ``answered`` is told of each that ran to a result."""

    def __init__(
        self, session_id: str, recorder: Recorder, audience: Audience, spawn: Spawn, answered: Callable[[], None]
    ):
        self._session_id = session_id
        self._recorder = recorder
        self._audience = audience
        self._spawn = spawn
        self._answered = answered
        self._items: list[Ticket] = []
        """Every prompt queued or running, in order."""
        self._awaited: dict[str, Ticket] = {}
        """Tickets by message id, until their prompt is stored (``prompted``)."""
        self.lock = anyio.Lock()
        """Held while a prompt runs (and a rewind, and the report of the MCP servers)."""

    @property
    def working(self) -> bool:
        """A prompt (a turn or a command) is running or queued."""
        return bool(self._items)

    def put(self, display: list[DisplayBlock], origin: ClientBridge | None, work: Work) -> Ticket:
        """Queue ``work`` for the prompt ``display`` (past the queue's limit: refused); wait on the ticket."""
        self._room_for(display)
        ticket = self._put(display, origin, work, waits=self.working)
        self._spawn(lambda: self._store(ticket), f"session {self._session_id} prompt queued")
        return ticket

    def now(self, display: list[DisplayBlock], work: Work) -> Ticket:
        """Run ``work`` at once, beside the prompt that runs (``/status`` while the session works): no foreground
        work of its own, never queued."""
        ticket = Ticket(None, display, started=True)
        ticket.stored.set()
        self._awaited[ticket.message_id] = ticket

        async def run() -> None:
            try:
                ticket.outcome = await work(None, ticket.message_id)
            except Exception as exc:
                ticket.error = exc
            finally:
                self._awaited.pop(ticket.message_id, None)
                ticket.done.set()

        self._spawn(run, f"session {self._session_id} command at once")
        return ticket

    async def run_task(self, display: list[DisplayBlock], work: Work) -> PromptResult:
        """A subagent's task from its parent: queued like a prompt, never refused."""
        ticket = self._put(display, None, work, waits=self.working)
        await self._store(ticket)
        return await ticket.result()

    def prompted(self, event: UserPrompted) -> None:
        """The recorder stored ``event``: the ticket waiting for it is inserted."""
        ticket = self._awaited.pop(event.message_id, None)
        if ticket is not None:
            ticket.stored_prompt.set()

    async def settled(self) -> None:
        """Until the prompt that runs has ended (bounded: a cancelled one ends at once)."""
        with anyio.move_on_after(SETTLE_S):
            async with self.lock:
                pass

    def submit(
        self, display: list[DisplayBlock], origin: ClientBridge | None, work: Work, *, input_id: str | None
    ) -> None:
        """Queue a prompt nobody waits for (a steering message that found no turn to join starts one; ``input_id``:
        it is already stored as queued); its connection is shown it like any other."""
        self._room_for(display)
        queued = self._put(display, origin, work, waits=False, input_id=input_id)
        queued.shown_by_origin = False

    def cancel(self, origin: ClientBridge | None = None) -> None:
        """Cancel the running prompt and every queued one (``origin``: only those that connection sent)."""
        for queued in list(self._items):
            if origin is None or queued.origin is origin:
                queued.scope.cancel()

    def listing(self) -> list[QueuedInput]:
        """What waits: the queued prompts (stored as queued, in order), then the steering messages for the running
        turn not yet applied."""
        listed = [
            QueuedInput(q.input_id, "prompt", q.display)
            for q in self._items
            if q.input_id is not None and not q.started
        ]
        listed.extend(
            QueuedInput(input_id, "steering", pending.display)
            for input_id, pending in self._recorder.projection.pending_inputs.items()
            if pending.input_kind == "steering"
        )
        return listed

    def _room_for(self, display: list[DisplayBlock]) -> None:
        """A prompt that would wait for others is refused past the queue's limit (``sessions.waiting``)."""
        if self._items:
            QUEUED_PROMPTS.check([q.display for q in self._items if not q.started], display)

    def _put(
        self,
        display: list[DisplayBlock],
        origin: ClientBridge | None,
        work: Work,
        *,
        waits: bool,
        input_id: str | None = None,
    ) -> Ticket:
        queued = Ticket(origin, display, input_id=new_input_id() if waits else input_id)
        if not waits:
            queued.stored.set()
        self._items.append(queued)
        self._awaited[queued.message_id] = queued
        self._spawn(lambda: self._serve(queued, work), f"session {self._session_id} prompt")
        return queued

    async def _store(self, queued: Ticket) -> None:
        """Store a prompt that waits as queued, before its turn may start (``_serve`` waits for it)."""
        if queued.stored.is_set():
            return
        assert queued.input_id is not None
        try:
            await self._recorder.record(
                InputQueued(input_id=queued.input_id, input_kind="prompt", display=queued.display)
            )
            queued.queued_in_log = True
        except StorageError as exc:
            queued.error = exc  # the prompt does not run: it could not be kept
            queued.scope.cancel()
        finally:
            queued.stored.set()

    async def _serve(self, queued: Ticket, work: Work) -> None:
        """Run one queued prompt when the ones before it have ended."""
        audience = self._audience
        try:
            with queued.scope:
                async with self.lock:
                    await queued.stored.wait()
                    queued.started = True
                    audience.origin = queued.origin if queued.origin is not None and queued.origin.present else None
                    audience.origin_shows_prompt = queued.shown_by_origin
                    try:
                        await audience.foreground(Foreground("running"))
                        queued.outcome = await work(queued.input_id, queued.message_id)
                    except Exception as exc:  # answered to the prompt's caller by the one error boundary
                        queued.error = exc
                    finally:
                        audience.origin = None
                        audience.origin_shows_prompt = True
                        with anyio.CancelScope(shield=True):
                            await audience.foreground(_ended(queued))
            if queued.outcome is not None:
                self._answered()
        finally:
            self._items.remove(queued)
            self._awaited.pop(queued.message_id, None)
            if not queued.started:
                await self._drop_unstarted(queued)
            queued.done.set()

    async def _drop_unstarted(self, queued: Ticket) -> None:
        """A prompt stored as queued that was cancelled before its turn came: the log says it did not run."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await queued.stored.wait()
            if queued.queued_in_log and queued.input_id is not None:
                why = "it was cancelled before its turn came"
                try:
                    await self._recorder.record(dropped_input(queued.input_id, "prompt", queued.display, why))
                except StorageError:
                    _log.warning(
                        "a cancelled queued prompt could not be marked as not run", session_id=self._session_id
                    )
