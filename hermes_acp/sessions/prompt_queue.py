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

It knows what runs only as a callable given the id the prompt was stored as queued with; not the commands, the
turn loop or ACP.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog

from hermes_acp.core import DisplayBlock, InputQueued
from hermes_acp.core.ids import new_input_id
from hermes_acp.errors import StorageError
from hermes_acp.turns.recorder import Recorder
from hermes_acp.turns.settlements import dropped_input

from .audience import Audience
from .views import ClientBridge, PromptResult, QueuedInput
from .waiting import QUEUED_PROMPTS

__all__ = ["PromptQueue", "Spawn", "Work"]

_log = structlog.get_logger("hermes_acp.sessions")


Work = Callable[[str | None], Coroutine[Any, Any, PromptResult]]
"""What a queued prompt runs once its turn comes, given the id it was stored as queued with."""
Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]], str], None]
"""Starts a task in the host's task group (the session's prompts run there)."""


@dataclass(eq=False)
class _Queued:
    """One prompt in the queue: its cancel scope, the connection that sent it, and how it ended."""

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
    result: PromptResult | None = None
    error: Exception | None = None


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
        self._items: list[_Queued] = []
        """Every prompt queued or running, in order."""
        self.lock = anyio.Lock()
        """Held while a prompt runs (and a rewind, and the report of the MCP servers)."""

    @property
    def working(self) -> bool:
        """A prompt (a turn or a command) is running or queued."""
        return bool(self._items)

    async def run(self, display: list[DisplayBlock], origin: ClientBridge | None, work: Work) -> PromptResult:
        """Queue ``work`` for the prompt ``display`` and wait for its end (past the queue's limit: refused)."""
        self._room_for(display)
        return await self._answer(self._put(display, origin, work, waits=self.working))

    async def run_task(self, display: list[DisplayBlock], work: Work) -> PromptResult:
        """A subagent's task from its parent: queued like a prompt, never refused."""
        return await self._answer(self._put(display, None, work, waits=self.working))

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
    ) -> _Queued:
        queued = _Queued(origin, display, input_id=new_input_id() if waits else input_id)
        if not waits:
            queued.stored.set()
        self._items.append(queued)
        self._spawn(lambda: self._serve(queued, work), f"session {self._session_id} prompt")
        return queued

    async def _answer(self, queued: _Queued) -> PromptResult:
        await self._store(queued)
        await queued.done.wait()
        if queued.error is not None:
            raise queued.error
        return queued.result or PromptResult(stop_reason="cancelled")

    async def _store(self, queued: _Queued) -> None:
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

    async def _serve(self, queued: _Queued, work: Work) -> None:
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
                        queued.result = await work(queued.input_id)
                    finally:
                        audience.origin = None
                        audience.origin_shows_prompt = True
            if queued.result is not None:
                self._answered()
        except Exception as exc:  # answered to the prompt's caller by the one error boundary
            queued.error = exc
        finally:
            self._items.remove(queued)
            if not queued.started:
                await self._drop_unstarted(queued)
            queued.done.set()

    async def _drop_unstarted(self, queued: _Queued) -> None:
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
