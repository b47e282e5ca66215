"""``Session``: one live conversation — its prompt queue and cancel, who is attached to it, and steering; the rest of
what it is lives in collaborators it holds, each seeing it through a narrow view.

- ``queue`` (``sessions.prompt_queue``): prompts and slash commands run one at a time, each in a task of the
  session's own (docs/architecture.md §4.11); ``cancel`` cancels the running one and everything queued, and the
  work of every child (docs/architecture.md §4.10).
- ``audience`` (``sessions.audience``): the connections attached, the update sink and permission gate its turns
  talk to; ``attach`` with catch-up gives a connection the log so far (each child's in its place), then live.
- ``steering`` (``sessions.steering``): messages for the running model turn (``steer``).
- ``options`` (``sessions.options``): mode, model, thinking effort, switches, title, and the stored record.
- ``commands`` (``commands.runner``): the slash commands a prompt may name, looked at around every prompt; they see
  the session as a ``CommandView``. ``rewinds`` (``sessions.rewind``): ``_session/rewind``, ``/rewind``, ``/undo``.
- ``lineage`` (``subagents.lineage``): a child's tie to its parent (a child takes ``task``s from its parent only);
  ``subagents`` (``subagents.runner``) runs the children of its ``delegate`` calls.
- ``notices`` (``sessions.notices``): its own warnings for the user. ``wiring`` (``sessions.turn_wiring``): what a
  model turn needs, and the one place the turn machinery, ``computer_use`` and the sandbox are imported, so
  ``session/new`` does not wait for them (the manager warms them up in the background: ``turn_imports``).

Only the session manager, which builds it, names this class; everything else sees a ``LiveSession`` or a narrower
view (``sessions.views``). No ACP here.
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from hermes_acp.commands.command_set import Reply
from hermes_acp.commands.instructions import InstructionFile
from hermes_acp.commands.prompt_files import PromptFile
from hermes_acp.commands.runner import BUSY_REWIND, CommandRunner
from hermes_acp.commands.skills import SkillShelf, skill_roots
from hermes_acp.core import DisplayBlock, InputQueued, Rewound, SessionEvent
from hermes_acp.core.ids import new_input_id, new_message_id, new_turn_id
from hermes_acp.core.notice import Notice
from hermes_acp.errors import InvalidParamsError, SessionBusyError
from hermes_acp.mcp_client import McpServers
from hermes_acp.providers.catalog import Cost
from hermes_acp.storage.base import SessionRecord, StoredEvent
from hermes_acp.subagents.lineage import ChildOpener, Lineage, SubagentLink
from hermes_acp.subagents.runner import SubagentRunner
from hermes_acp.tools.context import Workspace
from hermes_acp.turns.ports import LiveUpdate, Steer
from hermes_acp.turns.recorder import Recorder
from hermes_acp.turns.settlements import dropped_input
from hermes_acp.turns.timeline import effective

from ._runtime import SessionRuntime
from .audience import Audience
from .notices import SessionNotices
from .options import SessionOptions
from .prompt_queue import PromptQueue, Spawn, Ticket
from .rewind import Rewinds
from .services import SessionServices
from .steering import IdleBehavior, SteeringQueue, SteerOutcome
from .views import ClientBridge, PromptResult

if TYPE_CHECKING:
    from .turn_wiring import TurnWiring

__all__ = ["Session"]

_log = structlog.get_logger("hermes_acp.sessions")
LEFT_NOTICE = Notice(
    "warning",
    "The editor that started this turn left",
    "the turn goes on; its files and commands now use the host's own disk and sandboxed terminal",
)


def _event(stored: StoredEvent) -> SessionEvent:
    return stored.event


class Session:
    def __init__(
        self,
        record: SessionRecord,
        recorder: Recorder,
        runtime: SessionRuntime,
        services: SessionServices,
        *,
        audience: Audience,
        spawn: Spawn,
        workspace: Workspace,
        mcp_servers: list[dict[str, object]],
        mcp: McpServers,
        instructions: Sequence[InstructionFile] = (),
        prompt_files: Sequence[PromptFile] = (),
        link: SubagentLink | None = None,
        children: ChildOpener | None = None,
    ):
        self.id = record.id
        self.recorder = recorder
        self.runtime = runtime
        """The session's owner task: its resources and background jobs."""
        self.services = services
        self.audience = audience
        """The connections attached to the session: where its updates and questions go."""
        self.workspace = workspace
        self.mcp_servers = mcp_servers
        """The editor's MCP server specs for this session (kept in memory only: they may carry secrets)."""
        self.mcp = mcp
        """The live connections to those servers (started by the manager in the owner task)."""
        self.instructions = tuple(instructions)
        """The project instruction files read when the session opened (``/status`` lists them)."""
        self.lineage = Lineage(record, recorder, services.settings, link=link, children=children)
        """Where the session stands among delegations (a subagent's tie to its parent)."""
        self._running = False
        """A model turn runs."""
        self._turn_id: str | None = None
        """The model turn (or rewind) running now."""
        self.options = SessionOptions(
            record,
            services,
            recorder,
            self.lineage,
            busy=lambda: self._running,
            jobs=runtime.submit,
            budget=lambda: self.wiring.budget,
        )
        """Its mode, model, thinking effort, switches and title (and its stored record)."""
        self.queue = PromptQueue(self.id, recorder, audience, spawn, self.options.answered)
        """Every prompt queued or running, in order; one runs at a time."""
        recorder.on_prompted = self.queue.prompted
        self.steering = SteeringQueue()
        """Steering messages for the running model turn (opened for each turn, closed when it ends)."""
        self.commands = CommandRunner(self, prompt_files, SkillShelf(skill_roots(workspace, services.settings.home)))
        """The slash commands: the built-in ones, the prompt files, the skills (looked at around every prompt)."""
        self.rewinds = Rewinds(self)
        """The prompts a rewind can go back to, and the rewinds the commands run."""
        self.notices = SessionNotices(self)
        """Its own warnings for the user (MCP servers, skills, the sandbox, a driver not found)."""

    @cached_property
    def wiring(self) -> TurnWiring:
        """What the session's turns need (the one place the turn machinery is imported)."""
        from .turn_wiring import TurnWiring

        return TurnWiring(self)

    @cached_property
    def subagents(self) -> SubagentRunner:
        """Runs the children of this session's ``delegate`` calls."""
        return SubagentRunner(self, self.lineage.children)

    @property
    def busy(self) -> bool:
        """A model turn is running."""
        return self._running

    @property
    def turn_id(self) -> str | None:
        """The turn or command running now (what a notice, or a command's own events, are stored in)."""
        return self._turn_id if self._turn_id is not None else self.commands.turn_id

    # -- connections --------------------------------------------------------------------------------------------

    async def attach(
        self,
        client: ClientBridge,
        *,
        replay: Sequence[SessionEvent | StoredEvent] | None = None,
        catch_up: bool = False,
        after: int | None = None,
    ) -> None:
        """Attach ``client``. ``catch_up`` (``session/load``): it first gets the log up to now (``replay``, when
        the caller has it already, else read from the store; ``after``: only the events after that seq, what a
        client that rejoins by cursor missed), each child's log in its place, the streamed tail, then the rest
        live."""
        if not catch_up:
            await self.audience.attach(client)
            return

        async def history() -> Sequence[Any]:
            items = replay
            if items is None:
                stored = await self.services.store.load_events(self.id, after=after or 0)
                items = stored if after is not None else effective(stored, _event)
            return await self.subagents.expand(items)

        def still_open(shown: Sequence[SessionEvent]) -> Sequence[LiveUpdate]:
            """The cancels still open for the calls in ``shown``: none before a turn ran in this process (whose
            wiring is not built, nor imported, to say so)."""
            return self.wiring.open_cancels(shown) if "wiring" in self.__dict__ else ()

        await self.audience.attach(client, history=history, quiet=self.subagents.held, still_open=still_open)

    async def detach(self, client: ClientBridge, *, cancel_turns: bool = False) -> bool:
        """Detach ``client`` (it left, or closed the session); with ``cancel_turns`` its prompts are cancelled
        (``[host] on_leave = "cancel"``). When it lent the running turn its files or terminal, the turn is told it
        goes on with the host's own. True when it was attached."""
        lent = client.files(self.id) is not None or client.terminals(self.id) is not None
        was_origin = self.audience.origin is client and self.turn_id is not None and lent
        if not self.audience.detach(client):
            return False
        if cancel_turns:
            self.queue.cancel(client)
        elif was_origin and (turn_id := self.turn_id) is not None:
            with anyio.move_on_after(5):
                await self.recorder.notice(LEFT_NOTICE, turn_id=turn_id)
        return True

    # -- prompts ------------------------------------------------------------------------------------------------

    def submit(self, display: list[DisplayBlock], *, origin: ClientBridge | None = None) -> Ticket:
        """Queue one prompt (a model turn, or the slash command it names); its ticket says when it is inserted and
        how it ended. It is queued, and cancellable, before this returns; one that has to wait for the turn before
        it is stored as queued (``InputQueued``) first. A cancel while queued or running ends it ``cancelled`` (a
        command that had not started does not run). The turn runs in a task of the session's: a caller that stops
        waiting (its connection left) leaves it running. ``/status`` while the session works is answered at once,
        and ``/rewind`` / ``/undo`` are refused at once (they need an idle session), without waiting in the
        queue."""
        self.lineage.refuse("prompts")
        if self.queue.working and (invocation := self.commands.at_once(display)) is not None:

            async def at_once(_: str | None, message_id: str) -> PromptResult:
                await self.commands.answer_at_once(invocation, display, message_id)
                return PromptResult("end_turn", user_message_id=message_id)

            return self.queue.now(display, at_once)
        return self.queue.put(display, origin, lambda input_id, message_id: self._prompt(display, input_id, message_id))

    async def prompt(self, display: list[DisplayBlock], *, origin: ClientBridge | None = None) -> PromptResult:
        """``submit``, then wait for the prompt's end."""
        return await self.submit(display, origin=origin).result()

    async def task(self, display: list[DisplayBlock]) -> PromptResult:
        """A subagent's task from its parent: queued like a prompt (``cancel`` stops it), always a model turn."""
        return await self.queue.run_task(
            display, lambda input_id, message_id: self._turn(display, input_id=input_id, message_id=message_id)
        )

    async def _prompt(self, display: list[DisplayBlock], input_id: str | None, message_id: str) -> PromptResult:
        """A prompt's turn in the queue: the slash command it names (looked up once the commands were looked at
        again), or a model turn."""
        await self.commands.refresh()
        invocation = self.commands.find(display)
        outcome = await self.commands.run(invocation, display, input_id, message_id) if invocation is not None else None
        if isinstance(outcome, Reply):
            result = PromptResult(
                "end_turn",
                mode_changed=outcome.mode_changed,
                config_changed=outcome.config_changed,
                user_message_id=message_id,
            )
            if outcome.config_changed:  # every attached connection is told, each as it shows the options
                await self.audience.config_changed(self.options, mode_changed=outcome.mode_changed)
        else:
            prompt = outcome.prompt if outcome is not None else None
            result = await self._turn(display, prompt, input_id=input_id, message_id=message_id)
        await self.commands.refresh()
        return result

    async def _turn(
        self,
        display: list[DisplayBlock],
        prompt: str | None = None,
        *,
        input_id: str | None = None,
        message_id: str | None = None,
    ) -> PromptResult:
        self._running = True
        try:
            wiring = self.wiring
            await wiring.prepare()
            texts = await self.notices.at_turn()
            notes = self.notices.model_notes()
            turn_id = self._turn_id = new_turn_id()
            steering = self.steering.open(turn_id)
            message_id = message_id or new_message_id()
            try:
                turn = await wiring.run(
                    display,
                    turn_id=turn_id,
                    notices=texts,
                    notes=notes,
                    prompt=prompt,
                    input_id=input_id,
                    message_id=message_id,
                    steering=steering,
                )
            finally:
                self._turn_id = None
                for left in steering.close():  # the loop reports what it left; this only guards the inbox
                    _log.warning("a steering message outlived its turn", session_id=self.id, input_id=left.input_id)
        finally:
            self._running = False
        children = [child.usage for child in self.recorder.projection.children.values() if child.turn_id == turn_id]
        usage = sum(children, turn.usage)  # what the prompt cost, its subagents' work included
        usd = wiring.budget.prompt_usd
        return PromptResult(
            stop_reason=turn.stop_reason,
            usage=usage,
            failure=turn.failure,
            cost=Cost(usd) if usd is not None and self.lineage.link is None else None,
            user_message_id=message_id,
        )

    # -- steering -----------------------------------------------------------------------------------------------

    async def steer(
        self, display: list[DisplayBlock], *, origin: ClientBridge | None, idle: IdleBehavior = "startNewTurn"
    ) -> SteerOutcome:
        """A steering message (``_session/steering``): stored as queued for the running model turn, which applies it
        at its next safe point (``injected``). Without a turn taking steering, ``idle`` decides: start a new turn
        with it (``startedNewTurn``, queued like a prompt) or hand it back (``promptRequired``)."""

        def work(queued_as: str | None, message_id: str) -> Coroutine[Any, Any, PromptResult]:
            return self._prompt(display, queued_as, message_id)

        turn_id = self.steering.turn_id
        if turn_id is None:
            if idle == "promptRequired":
                return "promptRequired"
            self.queue.submit(display, origin, work, input_id=None)
            return "startedNewTurn"
        input_id = new_input_id()
        with self.steering.admitting(display):  # refused past the limit, before anything is stored
            await self.recorder.record(
                InputQueued(input_id=input_id, input_kind="steering", display=display, turn_id=turn_id)
            )
            if self.steering.offer(turn_id, Steer(input_id, display)):
                return "injected"
        if idle == "promptRequired":  # the turn ended while the message was stored
            why = "the turn it was sent to ended first; the editor sends it as a prompt"
            await self.recorder.record(dropped_input(input_id, "steering", display, why, turn_id=turn_id))
            return "promptRequired"
        try:
            self.queue.submit(display, origin, work, input_id=input_id)
        except InvalidParamsError:  # the turn ended while it was stored, and the prompt queue is full
            why = "the turn it was sent to ended first, and too many prompts wait to start one with it"
            await self.recorder.record(dropped_input(input_id, "steering", display, why, turn_id=turn_id))
            raise
        return "startedNewTurn"

    # -- rewind, cancel, close ----------------------------------------------------------------------------------

    async def rewind(self, message_id: str, *, field_name: str = "messageId") -> Rewound:
        """``_session/rewind``: back to just before the prompt ``message_id`` (``sessions.rewind``). Refused while a
        turn runs or prompts wait (``SessionBusyError``); prompts that arrive meanwhile wait for it."""
        if self.queue.working or self.queue.lock.locked():
            raise SessionBusyError(f"session {self.id}: {BUSY_REWIND}")
        async with self.queue.lock:
            self._turn_id = new_turn_id()
            try:
                rewound = await self.rewinds.run(message_id, turn_id=self._turn_id, field_name=field_name)
            finally:
                self._turn_id = None
        await self.rewinds.refold()
        return rewound

    def cancel(self) -> None:
        """Cancel the running turn and every queued prompt, and the work of every child it runs."""
        self.queue.cancel()
        if "subagents" in self.__dict__:  # a runner was made: it may have children running
            self.subagents.cancel_all()

    async def close(self) -> None:
        """Cancel whatever runs, then release everything the session holds (bounded)."""
        self.cancel()
        with anyio.move_on_after(5):
            async with self.queue.lock:
                pass
        await self.runtime.aclose()
