"""``Session``: one live conversation — its state, its prompt queue, its cancel scopes and the connections attached.

Prompts and slash commands are serialised (docs/architecture.md §4.11): each is queued with its cancel scope
before the caller's first await (or refused, past the limits on what waits: ``sessions.waiting``), and runs in a
task of the session's own (in the host's task group, not in the request that sent it), in turn, on a FIFO lock;
so a second prompt is answered when its own turn ends, and a turn goes on when the connection that sent it leaves (a
session host). ``cancel`` cancels the running turn and everything queued (docs/architecture.md §4.10); the next
prompt is accepted at once. Mode, model and thinking effort live here and in the store; the tool surface is derived
from them for every model request (docs/architecture.md §4.6).

The session's ``audience`` is the set of connections attached to it (``sessions.audience``): the update sink and
permission gate its turns talk to. A prompt that names one of the session's slash commands (``commands``: the
built-in ones, the prompt files and the skills) runs it: a reply the session stores itself, or a model turn with a
prompt of the command's own; the commands see the session as a ``CommandView``. The prompt files and the skills
(``skills``: found in the background when the session opens) are rescanned when each prompt starts and when it
ends; the editors are told when the list changed. The system prompt is fixed by the first model request, once the
first scan of the skills is done (it lists them). No ACP here.

What a turn needs is built by ``TurnWiring`` (``wiring``), which is also where the turn machinery, ``computer_use``
and the sandbox are imported: ``session/new`` does not wait for them, and the manager warms them up in the
background as soon as a session opens (``turn_imports``).

A session's ``delegate`` calls run children (``subagents``, ``hermes_acp.subagents``). A child is a ``Session`` too,
with a ``link`` to its parent: it takes ``task``s from the parent only (a client's prompt, mode or model change is
refused), runs with the parent's rights or fewer, and shows no slash commands.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from hermes_acp.commands.command_set import Reply
from hermes_acp.commands.instructions import InstructionFile
from hermes_acp.commands.prompt_files import PromptFile
from hermes_acp.commands.runner import BUSY_REWIND, CommandRunner
from hermes_acp.commands.skills import SkillShelf, skill_roots
from hermes_acp.core import (
    DisplayBlock,
    InputKind,
    InputQueued,
    NoticeAdded,
    Rewound,
    StopReason,
    TextBlock,
    TurnEnded,
    Usage,
)
from hermes_acp.core.ids import new_input_id, new_message_id, new_turn_id
from hermes_acp.core.notice import Notice
from hermes_acp.errors import InvalidParamsError, SessionBusyError, StorageError
from hermes_acp.mcp_client import McpServers
from hermes_acp.storage.base import SessionRecord
from hermes_acp.subagents.lineage import ChildOpener, Lineage, SubagentLink
from hermes_acp.subagents.runner import SubagentRunner
from hermes_acp.tools.context import Workspace
from hermes_acp.turns.ports import Steer
from hermes_acp.turns.recorder import Recorder
from hermes_acp.turns.recovery import STORE_FAILED_TEXT, recovery_events
from hermes_acp.turns.settlements import dropped_input
from hermes_acp.turns.system_prompt import build_system_prompt
from hermes_acp.turns.timeline import effective_events

from ._runtime import SessionRuntime
from .audience import Audience
from .options import SessionOptions
from .ports import ClientBridge
from .rewind import Rewinds
from .services import SessionServices
from .steering import IdleBehavior, SteeringQueue, SteerOutcome
from .waiting import QUEUED_PROMPTS

if TYPE_CHECKING:
    from .turn_wiring import TurnWiring

__all__ = ["PromptResult", "QueuedInput", "Session", "SessionServices"]

_log = structlog.get_logger("hermes_acp.sessions")
LEFT_NOTICE = Notice(
    "warning",
    "The editor that started this turn left",
    "the turn goes on; its files and commands now use the host's own disk and sandboxed terminal",
)


@dataclass(frozen=True, slots=True)
class PromptResult:
    """How one prompt ended, and what the editor should be told again."""

    stop_reason: StopReason
    usage: Usage | None = None
    """None when no model was asked (a command the session answered itself, or a cancel before the turn began)."""
    mode_changed: bool = False
    config_changed: bool = False
    """The mode, model or thinking effort changed (a command did it)."""
    failure: str | None = None
    """Why the model request failed, when that ended the turn."""
    user_message_id: str | None = None
    """The id the prompt is stored with (what ``_session/rewind`` and a fork at a message name)."""


_Work = Callable[[str | None], Coroutine[Any, Any, "PromptResult"]]
"""What a queued prompt runs once its turn comes, given the id it was stored as queued with."""


@dataclass(frozen=True, slots=True)
class QueuedInput:
    """A prompt or steering message waiting in a session (``/status`` and ``session/list``'s ``_meta`` list them)."""

    input_id: str
    input_kind: InputKind
    display: list[DisplayBlock]

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.display if isinstance(b, TextBlock))


@dataclass(eq=False)
class _Queued:
    """One prompt in the session's queue: its cancel scope, the connection that sent it, and how it ended."""

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


class Session:
    def __init__(
        self,
        record: SessionRecord,
        recorder: Recorder,
        runtime: SessionRuntime,
        services: SessionServices,
        *,
        audience: Audience,
        spawn: Callable[[Callable[[], Coroutine[Any, Any, None]], str], None],
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
        self.services = services
        self.audience = audience
        """The connections attached to the session: where its updates and questions go."""
        self._spawn = spawn
        """Starts a task in the host's task group (the session's turns run there)."""
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
        self.options = SessionOptions(record, services, recorder, self.lineage, busy=lambda: self._running)
        """Its mode, model, thinking effort, switches and title (and its stored record)."""
        self._system_prompt: str | None = None
        self.commands = CommandRunner(self, prompt_files, SkillShelf(skill_roots(workspace, services.settings.home)))
        """The slash commands: the built-in ones, the prompt files, the skills (looked at around every prompt)."""
        self.rewinds = Rewinds(self)
        """The prompts a rewind can go back to, and the rewinds the commands run."""
        self._told_once = False
        self._turn_id: str | None = None
        """The turn running now (a notice during it is stored in it for clients without notices)."""
        self._turn_lock = anyio.Lock()
        self._queue: list[_Queued] = []
        """Every prompt queued or running, in order."""
        self.steering = SteeringQueue()
        """Steering messages for the running model turn (opened for each turn, closed when it ends)."""

    @cached_property
    def wiring(self) -> TurnWiring:
        """What the session's turns need (the one place the turn machinery is imported)."""
        from .turn_wiring import TurnWiring

        return TurnWiring(self)

    @property
    def system_prompt(self) -> str:
        """Fixed by the session's first model request, for its life in this process: byte-identical for every
        request (until then, what it would be now: for the context meter)."""
        if self._system_prompt is not None:
            return self._system_prompt
        return self._build_system_prompt()

    async def fix_system_prompt(self) -> None:
        """Wait for the first scan of the skills (they are listed in it), then fix the system prompt."""
        if self._system_prompt is None:
            await self.commands.ensure()
            self._system_prompt = self._build_system_prompt()

    def _build_system_prompt(self) -> str:
        """The project's prompt; a subagent's adds what its role is and that it ends with a report."""
        client = self.options.client_system_prompt
        prompt = build_system_prompt(self.workspace, self.instructions, self.commands.skills.skills, client)
        return prompt + self.lineage.prompt()

    @cached_property
    def subagents(self) -> SubagentRunner:
        """Runs the children of this session's ``delegate`` calls."""
        return SubagentRunner(self, self.lineage.children)

    @property
    def busy(self) -> bool:
        """A model turn is running."""
        return self._running

    @property
    def working(self) -> bool:
        """A prompt (a turn or a command) is running or queued."""
        return bool(self._queue)

    @property
    def turn_id(self) -> str | None:
        """The turn or command running now (what a notice, or a command's own events, are stored in)."""
        return self._turn_id if self._turn_id is not None else self.commands.turn_id

    # -- connections --------------------------------------------------------------------------------------------

    async def attach(
        self, client: ClientBridge, *, replay: Sequence[Any] | None = None, catch_up: bool = False
    ) -> None:
        """Attach ``client``. ``catch_up`` (``session/load``): it first gets the log up to now (``replay``, when
        the caller has it already, else read from the store), each child's log in its place, the streamed tail,
        then the rest live."""
        if not catch_up:
            await self.audience.attach(client)
            return

        async def history() -> Sequence[Any]:
            events = replay
            if events is None:
                events = effective_events([s.event for s in await self.services.store.load_events(self.id)])
            return await self.subagents.expand(events)

        await self.audience.attach(client, history=history, quiet=self.subagents.held)

    async def detach(self, client: ClientBridge, *, cancel_turns: bool = False) -> bool:
        """Detach ``client`` (it left, or closed the session); with ``cancel_turns`` its prompts are cancelled
        (``[host] on_leave = "cancel"``). When it lent the running turn its files or terminal, the turn is told it
        goes on with the host's own. True when it was attached."""
        lent = client.files(self.id) is not None or client.terminals(self.id) is not None
        was_origin = self.audience.origin is client and self.turn_id is not None and lent
        if not self.audience.detach(client):
            return False
        if cancel_turns:
            for queued in list(self._queue):
                if queued.origin is client:
                    queued.scope.cancel()
        elif was_origin and (turn_id := self.turn_id) is not None:
            with anyio.move_on_after(5):
                await self.recorder.notice(LEFT_NOTICE, turn_id=turn_id)
        return True

    # -- prompts ------------------------------------------------------------------------------------------------

    async def prompt(self, display: list[DisplayBlock], *, origin: ClientBridge | None = None) -> PromptResult:
        """Queue one prompt (a model turn, or the slash command it names) and wait for its end. It is queued, and
        cancellable, before the first await; one that has to wait for the turn before it is stored as queued
        (``InputQueued``) first. A cancel while queued or running answers ``cancelled`` (a command that had not
        started does not run). The turn runs in a task of the session's: a caller that stops waiting (its
        connection left) leaves it running. ``/status`` while the session works is answered at once, and
        ``/rewind`` / ``/undo`` are refused at once (they need an idle session), without waiting in the queue."""
        self.lineage.refuse("prompts")
        if self._queue:
            invocation = self.commands.at_once(display)
            if invocation is not None:
                await self.commands.answer_at_once(invocation, display)
                return PromptResult("end_turn")
        self._room_for(display)
        return await self._answer(self._enqueue(display, origin, waits=bool(self._queue)))

    async def task(self, display: list[DisplayBlock]) -> PromptResult:
        """A subagent's task from its parent: queued like a prompt (``cancel`` stops it), always a model turn."""
        queued = self._enqueue(
            display, None, waits=bool(self._queue), work=lambda input_id: self._turn(display, input_id=input_id)
        )
        return await self._answer(queued)

    async def _answer(self, queued: _Queued) -> PromptResult:
        await self._store_queued(queued)
        await queued.done.wait()
        if queued.error is not None:
            raise queued.error
        return queued.result or PromptResult(stop_reason="cancelled")

    def submit(self, display: list[DisplayBlock], *, origin: ClientBridge | None, input_id: str | None) -> None:
        """Queue a prompt nobody waits for (a steering message that found no turn to join starts one); ``input_id``:
        it is already stored as queued."""
        self._room_for(display)
        queued = self._enqueue(display, origin, waits=False, input_id=input_id)
        queued.shown_by_origin = False
        self.runtime.submit(lambda: self._store_queued(queued), "queued prompt")

    def _room_for(self, display: list[DisplayBlock]) -> None:
        """A prompt that would wait for others is refused past the queue's limit (``sessions.waiting``)."""
        if self._queue:
            QUEUED_PROMPTS.check([q.display for q in self._queue if not q.started], display)

    def _enqueue(
        self,
        display: list[DisplayBlock],
        origin: ClientBridge | None,
        *,
        waits: bool,
        input_id: str | None = None,
        work: _Work | None = None,
    ) -> _Queued:
        """Queue ``work`` (default: the prompt, a turn or the command it names), given the queued input's id."""
        queued = _Queued(origin, display, input_id=new_input_id() if waits else input_id)
        if not waits:
            queued.stored.set()
        self._queue.append(queued)
        run = work or (lambda queued_as: self._prompt(display, queued_as))
        self._spawn(lambda: self._serve(queued, run), f"session {self.id} prompt")
        return queued

    async def _store_queued(self, queued: _Queued) -> None:
        """Store a prompt that waits as queued, before its turn may start (``_serve`` waits for it)."""
        if queued.stored.is_set():
            return
        assert queued.input_id is not None
        try:
            await self.recorder.record(
                InputQueued(input_id=queued.input_id, input_kind="prompt", display=queued.display)
            )
            queued.queued_in_log = True
        except StorageError as exc:
            queued.error = exc  # the prompt does not run: it could not be kept
            queued.scope.cancel()
        finally:
            queued.stored.set()

    async def _serve(self, queued: _Queued, work: _Work) -> None:
        """Run one queued prompt when the ones before it have ended (docs/architecture.md §4.11)."""
        try:
            with queued.scope:
                async with self._turn_lock:
                    await queued.stored.wait()
                    queued.started = True
                    self.audience.origin = (
                        queued.origin if queued.origin is not None and queued.origin.present else None
                    )
                    self.audience.origin_shows_prompt = queued.shown_by_origin
                    try:
                        queued.result = await work(queued.input_id)
                    finally:
                        self.audience.origin = None
                        self.audience.origin_shows_prompt = True
            titled = self.recorder.projection.title is not None or self.lineage.link is not None
            if queued.result is not None and not titled and self.recorder.projection.first_prompt:
                self.runtime.submit(self.options.write_title, "title")
        except Exception as exc:  # answered to the prompt's caller by the one error boundary
            queued.error = exc
        finally:
            self._queue.remove(queued)
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
                    await self.recorder.record(dropped_input(queued.input_id, "prompt", queued.display, why))
                except StorageError:
                    _log.warning("a cancelled queued prompt could not be marked as not run", session_id=self.id)

    async def _prompt(self, display: list[DisplayBlock], input_id: str | None = None) -> PromptResult:
        await self.commands.refresh()
        invocation = self.commands.find(display)
        outcome = await self.commands.run(invocation, display, input_id) if invocation is not None else None
        if isinstance(outcome, Reply):
            result = PromptResult("end_turn", mode_changed=outcome.mode_changed, config_changed=outcome.config_changed)
        else:
            prompt = outcome.prompt if outcome is not None else None
            result = await self._turn(display, prompt, input_id=input_id)
        await self.commands.refresh()
        return result

    async def _turn(
        self, display: list[DisplayBlock], prompt: str | None = None, *, input_id: str | None = None
    ) -> PromptResult:
        self._running = True
        try:
            await self.repair()
            await self.fix_system_prompt()
            wiring = self.wiring
            texts: list[str] = []
            if self.lineage.link is None:  # a child's parent was told about its MCP servers, skills and sandbox
                # Bounded: MCP servers still starting are reported, not awaited.
                mcp = [Notice("warning", text.removeprefix("⚠ ")) for text in await self.mcp.prepare_turn()]
                skills = [Notice("warning", problem.text()) for problem in self.commands.skills.new_problems()]
                texts = await self._show_notices([*await self._once_notices(), *mcp, *skills])
            turn_id = self._turn_id = new_turn_id()
            steering = self.steering.open(turn_id)
            message_id = new_message_id()
            try:
                turn = await wiring.run(
                    display,
                    turn_id=turn_id,
                    notices=texts,
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
        return PromptResult(stop_reason=turn.stop_reason, usage=usage, failure=turn.failure, user_message_id=message_id)

    # -- steering -----------------------------------------------------------------------------------------------

    async def steer(
        self, display: list[DisplayBlock], *, origin: ClientBridge | None, idle: IdleBehavior = "startNewTurn"
    ) -> SteerOutcome:
        """A steering message (``_session/steering``): stored as queued for the running model turn, which applies it
        at its next safe point (``injected``). Without a turn taking steering, ``idle`` decides: start a new turn
        with it (``startedNewTurn``, queued like a prompt) or hand it back (``promptRequired``)."""
        turn_id = self.steering.turn_id
        if turn_id is None:
            if idle == "promptRequired":
                return "promptRequired"
            self.submit(display, origin=origin, input_id=None)
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
            self.submit(display, origin=origin, input_id=input_id)
        except InvalidParamsError:  # the turn ended while it was stored, and the prompt queue is full
            why = "the turn it was sent to ended first, and too many prompts wait to start one with it"
            await self.recorder.record(dropped_input(input_id, "steering", display, why, turn_id=turn_id))
            raise
        return "startedNewTurn"

    # -- rewind -------------------------------------------------------------------------------------------------

    async def rewind(self, message_id: str, *, field_name: str = "messageId") -> Rewound:
        """``_session/rewind``: back to just before the prompt ``message_id`` (``sessions.rewind``). Refused while a
        turn runs or prompts wait (``SessionBusyError``); prompts that arrive meanwhile wait for it."""
        if self._queue or self._turn_lock.locked():
            raise SessionBusyError(f"session {self.id}: {BUSY_REWIND}")
        async with self._turn_lock:
            self._turn_id = new_turn_id()
            try:
                rewound = await self.rewinds.run(message_id, turn_id=self._turn_id, field_name=field_name)
            finally:
                self._turn_id = None
        await self.rewinds.refold()
        return rewound

    def queue_listing(self) -> list[QueuedInput]:
        """What waits: the queued prompts (stored as queued, in order), then the steering messages for the running
        turn not yet applied."""
        listed = [
            QueuedInput(q.input_id, "prompt", q.display)
            for q in self._queue
            if q.input_id is not None and not q.started
        ]
        listed.extend(
            QueuedInput(input_id, "steering", pending.display)
            for input_id, pending in self.recorder.projection.pending_inputs.items()
            if pending.input_kind == "steering"
        )
        return listed

    async def report_servers(self) -> None:
        """Once the session is open: its MCP servers that could not start (or be used), told at once instead of
        with the first prompt. Waits (bounded) for them to settle, then tells in the prompt queue (a turn that ran
        meanwhile told them itself; nothing is told twice), so commands are not held up by a slow server."""
        if not self.mcp:
            return
        await self.mcp.settled()
        async with self._turn_lock:  # between turns: never inside another turn's text
            notices = [Notice("warning", text.removeprefix("⚠ ")) for text in await self.mcp.prepare_turn(0)]
            texts = await self._show_notices(notices)
            if texts:  # a client without notices: agent text, stored like a command's answer (a replay shows it)
                turn_id = new_turn_id()
                added = [NoticeAdded(turn_id=turn_id, message_id=new_message_id(), text=text) for text in texts]
                await self.recorder.record(*added, TurnEnded(turn_id=turn_id, stop_reason="end_turn"))

    def cancel(self) -> None:
        """Cancel the running turn and every queued prompt, and the work of every child it runs."""
        for queued in list(self._queue):
            queued.scope.cancel()
        if "subagents" in self.__dict__:  # a runner was made: it may have children running
            self.subagents.cancel_all()

    async def repair(self) -> None:
        """Settle what an earlier turn left open when it stopped on a failed write, as a reload would."""
        repairs = recovery_events(self.recorder.projection, text=STORE_FAILED_TEXT, inputs=False)
        if repairs:
            await self.recorder.record(*repairs)

    async def _show_notices(self, notices: Sequence[Notice]) -> list[str]:
        """Show each notice live where the clients take notices; the texts of the others, to store with the turn."""
        return [notice.as_text() for notice in notices if not await self.recorder.sink.notice(notice)]

    async def _once_notices(self) -> list[Notice]:
        """Once per session, at its first turn: commands not sandboxed although ``[sandbox]`` wants them to be, and
        a configured cua-driver that cannot be found."""
        if self._told_once:
            return []
        self._told_once = True
        sandbox = self.wiring.sandbox
        found = [sandbox.notice(await sandbox.availability()), self.wiring.computer_use.notice()]
        return [notice for notice in found if notice is not None]

    async def notify(self, notice: Notice) -> None:
        """A warning that arises during a turn (an image downgraded to text): live, or stored in the turn."""
        if (turn_id := self.turn_id) is not None:
            await self.recorder.notice(notice, turn_id=turn_id)

    async def close(self) -> None:
        """Cancel whatever runs, then release everything the session holds (bounded)."""
        self.cancel()
        with anyio.move_on_after(5):
            async with self._turn_lock:
                pass
        await self.runtime.aclose()
