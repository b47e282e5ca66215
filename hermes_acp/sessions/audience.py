"""``Audience``: the connections attached to one session, and the one place updates and questions fan out.

A session is attached to every connection that created, loaded or resumed it (docs/architecture.md §6.7). The
audience is the session's ``UpdateSink`` and ``PermissionGate`` (the ports the turn loop talks to) and its
``Elicitor``:

- **Updates** go to every attached connection, each through its own bridge, so each gets them shaped for its own
  capabilities (notices, compaction updates). Each send is bounded per connection (``send_timeout_s``, by default
  ``members.MEMBER_SEND_S``): a client that lets one wait out counts as stalled until the turn ends and gets
  nothing more live (``session/load`` replays it), while the others go on. From then on its updates keep the cursor
  of the last stored event it was given, so a rejoin by cursor replays what it missed (``members.py``). This is the
  one stall check on an update's way (the recorder adds none). The prompt of a turn is shown live to the
  connections that did not send it.
- **Questions** (permission requests, elicitation, an address to open) go to every attached connection that can
  answer them; the first answer wins and is final, and the requests to the others are withdrawn (their waits are
  cancelled, which tells each client with ``$/cancel_request``). A connection that attaches while a question waits
  is asked too. With nobody attached, a question waits for the next attach (``wait_for_attach``, bounded by
  ``unattended_wait_s``, 0 = as long as the turn lives); without ``wait_for_attach`` (inline mode: the one client is
  gone) it fails at once as a closed connection.
- **Where the foreground work stands** (``foreground``): running, waiting on the user while a question is open
  (``requires_action``, then running again once it is answered), idle with how the prompt ended; each connection
  is told as it can show it (``ClientBridge.state_changed``: ACP v2's ``state_update``), in turn with its updates.
- **Catch-up** (``attach`` with a history): the connection is added while the recorder holds its write lock, so
  every stored event is either in the history it is given (replayed) or emitted after it joined (live), never
  both, never neither: an event-level cursor. What it receives live meanwhile waits in its backlog until the
  history and the streamed tail (text and reasoning not yet checkpointed, the running tools' live output, what each
  running command's terminal showed) are sent;
  then the backlog drains, in order, and the questions still open are put to it.
- **Files and terminals** of a turn are those of the connection whose prompt it runs (``origin``); when that
  connection leaves, the turn goes on with the host's own disk and (sandboxed) terminal, and the user is told.
- **A subagent's** audience has a ``relay`` to its parent's (``subagents.relay.ParentRelay``): its updates and
  questions also go to the parent's connections, each shaped for what that connection shows (``deliver_each``,
  ``ask_each``: through each member's own backlog and stall, so a connection catching up with the parent gets the
  child's traffic in order too). A catch-up history may hold a child's log in place (a ``Replayed`` item).

It knows the ports, not ACP.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

import anyio
from anyio.abc import TaskGroup

from hermes_acp.commands.command_set import Command
from hermes_acp.core import (
    NoticeAdded,
    SessionEvent,
    TurnEnded,
    UserPrompted,
)
from hermes_acp.core.notice import Notice
from hermes_acp.errors import PermissionDeniedError, ToolError
from hermes_acp.storage.base import StoredEvent
from hermes_acp.subagents.view import Relay, Viewer
from hermes_acp.tools.context import EditorFiles, EditorTerminals, ElicitationAnswer, Elicitor
from hermes_acp.turns.ports import (
    LiveUpdate,
    PermissionAnswer,
    PermissionChoice,
    PermissionQuestion,
    UpdateSink,
)
from hermes_acp.turns.projection import transcript_events

from .live_tail import LiveTail
from .members import MEMBER_SEND_S, Member, Send
from .views import ClientBridge, Foreground

if TYPE_CHECKING:
    from .options import SessionOptions

__all__ = ["Audience", "Replayed"]

T = TypeVar("T")


@runtime_checkable
class Replayed(Protocol):
    """An item of a catch-up history that is not one of the session's own events (a child's log, in place)."""

    async def replay(self, client: ClientBridge, sink: UpdateSink) -> None:
        """Render it to ``client`` (``sink``: the client's sink for this session)."""
        ...


@dataclass(eq=False)
class _Question(Generic[T]):
    """One request of ours put to every attached connection that can answer it; the first answer counts."""

    call: Callable[[ClientBridge], Awaitable[T]]
    can_answer: Callable[[ClientBridge], bool]
    blocks: bool = True
    """The foreground work waits on it (``requires_action`` while it is open); False for a background request, such
    as an MCP server's sign-in page, which the turn does not wait for."""
    group: TaskGroup | None = None
    asking: dict[int, anyio.CancelScope] = field(default_factory=dict)
    """By member id: the scope of the request to that connection."""
    answered: anyio.Event = field(default_factory=anyio.Event)
    changed: anyio.Event = field(default_factory=anyio.Event)
    result: T | None = None
    error: Exception | None = None

    def put(self, member: Member) -> None:
        if self.group is None or self.answered.is_set() or id(member) in self.asking:
            return
        if not self.can_answer(member.client):
            return
        scope = anyio.CancelScope()
        self.asking[id(member)] = scope
        self.group.start_soon(self._ask, member, scope)

    def withdraw(self, member: Member) -> None:
        scope = self.asking.pop(id(member), None)
        if scope is not None:
            scope.cancel()
            self._wake()

    async def _ask(self, member: Member, scope: anyio.CancelScope) -> None:
        with scope:
            try:
                result = await self.call(member.client)
            except ConnectionError:  # that client went away: the others (or the next to attach) may answer
                self.asking.pop(id(member), None)
                self._wake()
                return
            except Exception as exc:
                self._settle(None, exc)
                return
            self._settle(result, None)

    def _settle(self, result: T | None, error: Exception | None) -> None:
        if self.answered.is_set():
            return  # a later answer from another connection: the first one counts
        self.result, self.error = result, error
        self.answered.set()
        self._wake()

    def _wake(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()


class Audience:
    """The connections attached to one session (see the module docstring)."""

    def __init__(
        self,
        session_id: str,
        *,
        wait_for_attach: bool,
        unattended_wait_s: float = 0.0,
        relay: Relay | None = None,
        send_timeout_s: float = MEMBER_SEND_S,
    ):
        self._session_id = session_id
        self._send_timeout_s = send_timeout_s
        self._relay = relay
        self._wait_for_attach = wait_for_attach
        self._unattended_wait_s = unattended_wait_s
        self._members: list[Member] = []
        self._questions: list[_Question[Any]] = []
        self._tail = LiveTail()
        self._joined = anyio.Event()
        """Set (and replaced) whenever a connection finishes attaching."""
        self._shown_notices: dict[str, set[int]] = {}
        """A notice's text → the members that showed it live (the stored copy is not rendered to them again)."""
        self._could: set[str] = set()
        """The kinds of question (``form``, ``url``) the connections attached so far could answer."""
        self.origin: ClientBridge | None = None
        """The connection whose prompt the running turn serves (its files and terminals; its prompt it shows
        itself)."""
        self.origin_shows_prompt = True
        """False for a turn the origin did not send as a prompt (a steering message that started one): then it is
        shown the prompt too."""
        self.state = Foreground()
        """Where the session's foreground work stands now (``foreground``)."""

    # -- who is attached --------------------------------------------------------------------------------------

    @property
    def clients(self) -> list[ClientBridge]:
        return [member.client for member in self._members]

    def __len__(self) -> int:
        return len(self._members)

    def has(self, client: Viewer) -> bool:
        """Attached (or, for a subagent, attached to its parent and shown child sessions)."""
        if any(member.client is client for member in self._members):
            return True
        return self._relay is not None and self._relay.has(client)

    def tail(self) -> list[LiveUpdate]:
        """What was streamed live and is not in the log yet (see ``LiveTail``)."""
        return self._tail.snapshot()

    async def attach(
        self,
        client: ClientBridge,
        *,
        history: Callable[[], Awaitable[Sequence[SessionEvent | StoredEvent | Replayed]]] | None = None,
        quiet: Callable[[], AbstractAsyncContextManager[None]] | None = None,
        still_open: Callable[[Sequence[SessionEvent]], Sequence[LiveUpdate]] | None = None,
    ) -> None:
        """Attach ``client``; with ``history`` (``session/load``) it first gets the log so far (stored events carry
        their seq to the sink), then the streamed tail, then what happened meanwhile. ``quiet`` holds the
        recorder's writes while the cursor is taken. ``still_open``: what of the replayed events may still be
        acted on now (the cancels of calls that still run), told once the catch-up is sent, before anything that
        happened after it (a call that settles meanwhile is shown settled after its cancel was offered)."""
        if self.has(client):
            if history is None:
                return
            self.detach(client)
        member = Member(client, client.sink(self._session_id), timeout_s=self._send_timeout_s)
        if history is None:
            self._join(member)
            return
        member.backlog = []
        async with _held(quiet):
            events = await history()
            tail = self._tail.snapshot()
            self._members.append(member)
        try:
            own = [_event(item) for item in events if not isinstance(item, Replayed)]
            shown = {id(event) for event in transcript_events(own)}
            for item in events:
                if isinstance(item, Replayed):
                    await item.replay(member.client, member.sink)
                elif id(_event(item)) in shown:
                    seq = item.seq if isinstance(item, StoredEvent) else None
                    await member.sink.emit_event(_event(item), live=False, seq=seq)
            for update in tail:
                await member.sink.emit_live(update)
            while member.backlog:
                await member.backlog.pop(0)(member.sink)
            if still_open is not None:
                for update in still_open([event for event in own if id(event) in shown]):
                    await member.sink.emit_live(update)
                while member.backlog:
                    await member.backlog.pop(0)(member.sink)
        except BaseException:
            self._drop(member)
            raise
        member.backlog = None
        self._members.remove(member)
        self._join(member)

    def _join(self, member: Member) -> None:
        self._members.append(member)
        self._could |= {mode for mode in ("form", "url") if _offers(member.client, self._session_id, mode)}
        for question in list(self._questions):
            question.put(member)
        self._joined.set()
        self._joined = anyio.Event()

    def detach(self, client: ClientBridge) -> bool:
        """Detach ``client``; True when it was attached. The questions put to it are withdrawn from it."""
        member = next((m for m in self._members if m.client is client), None)
        if member is None:
            return False
        self._drop(member)
        if self.origin is client:
            self.origin = None
        return True

    def _drop(self, member: Member) -> None:
        if member in self._members:
            self._members.remove(member)
        for question in self._questions:
            question.withdraw(member)

    # -- UpdateSink ----------------------------------------------------------------------------------------

    async def emit_event(self, event: SessionEvent, *, live: bool, seq: int | None = None) -> None:
        await self._emit_event(event, live=live, seq=seq)
        if self._relay is not None:
            await self._relay.emit_event(event, live=live, seq=seq)

    async def _emit_event(self, event: SessionEvent, *, live: bool, seq: int | None) -> None:
        if live:
            self._tail.stored(event)
        skip: set[int] = set()
        if isinstance(event, NoticeAdded) and live:
            skip = self._shown_notices.pop(event.text, set())
        for member in list(self._members):
            if id(member) in skip:
                continue
            shown_as_replay = (
                live
                and isinstance(event, UserPrompted)
                and (member.client is not self.origin or not self.origin_shows_prompt)
            )

            async def send(sink: UpdateSink, replayed: bool = shown_as_replay) -> None:
                await sink.emit_event(event, live=live and not replayed, seq=seq)

            await member.deliver(send)
        if isinstance(event, TurnEnded):
            for member in self._members:
                member.stalled = False  # the next turn tries every client again

    async def emit_live(self, update: LiveUpdate) -> None:
        self._tail.live(update)
        for member in list(self._members):

            async def send(sink: UpdateSink) -> None:
                await sink.emit_live(update)

            await member.deliver(send)
        if self._relay is not None:
            await self._relay.emit_live(update)

    async def foreground(self, state: Foreground) -> None:
        """The foreground work is now ``state``: each attached connection is told, in turn with its updates."""
        self.state = state
        session_id = self._session_id
        for member in list(self._members):

            async def send(_: UpdateSink, client: ClientBridge = member.client) -> None:
                await client.state_changed(session_id, state)

            await member.deliver(send)

    async def deliver_each(self, send_to: Callable[[ClientBridge], Send | None]) -> None:
        """Send each attached connection what ``send_to`` makes for it (None: nothing), in turn with the rest of
        its updates (a connection still catching up gets it after its history)."""
        for member in list(self._members):
            send = send_to(member.client)
            if send is not None:
                await member.deliver(send)

    async def notice(self, notice: Notice) -> bool:
        """Shown live to each connection that takes notices; False when one does not (or nobody is attached):
        then the caller stores it, and the stored copy is rendered to the others only. A subagent's notices are
        always stored (its parent's connections see them as its events)."""
        if self._relay is not None:
            return False
        shown: set[int] = set()
        everyone = bool(self._members)
        for member in list(self._members):
            took = False

            async def send(sink: UpdateSink) -> None:
                nonlocal took
                took = await sink.notice(notice)

            await member.deliver(send)
            if took:
                shown.add(id(member))
            else:
                everyone = False
        if not everyone and shown:
            self._shown_notices[notice.as_text()] = shown
        return everyone

    async def send(self, update: dict[str, Any]) -> None:
        """A session-level update (mode, config options) to every attached connection."""
        for member in list(self._members):
            with anyio.move_on_after(self._send_timeout_s):
                await member.client.send(self._session_id, update)

    async def commands_changed(self, commands: Sequence[Command]) -> None:
        for member in list(self._members):
            with anyio.move_on_after(self._send_timeout_s):
                await member.client.commands_changed(self._session_id, commands)

    async def config_changed(self, options: SessionOptions, *, mode_changed: bool) -> None:
        """The session's options changed (its mode too): each connection is told as it can show them."""
        for member in list(self._members):
            with anyio.move_on_after(self._send_timeout_s):
                await member.client.config_changed(self._session_id, options, mode_changed=mode_changed)

    # -- PermissionGate and Elicitor: the first answer wins ------------------------------------------------

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
        if self._relay is not None:
            return await self._relay.ask(question)
        session_id = self._session_id
        return await self.ask_each(lambda client: client.gate(session_id).ask(question))

    async def ask_each(self, ask: Callable[[ClientBridge], Awaitable[PermissionAnswer]]) -> PermissionAnswer:
        """A permission question put to every attached connection as ``ask`` puts it to each; the first answer."""
        return await self._each(ask, gone="cancelled", what="the permission request")

    async def choose(
        self, question: PermissionQuestion, choices: Sequence[PermissionChoice], *, refusal: str
    ) -> str | None:
        if self._relay is not None:
            return await self._relay.choose(question, choices, refusal=refusal)
        session_id = self._session_id
        return await self.choose_each(lambda client: client.gate(session_id).choose(question, choices, refusal=refusal))

    async def choose_each(self, choose: Callable[[ClientBridge], Awaitable[str | None]]) -> str | None:
        """A question with choices put to every attached connection as ``choose`` puts it to each; the first
        answer (None: the user cancelled the turn)."""
        return await self._each(choose, gone=None, what="the question")

    async def _each(self, call: Callable[[ClientBridge], Awaitable[T]], *, gone: T, what: str) -> T:
        """The one way a question of a turn (this session's, or a child's through its relay) is put: to every
        attached connection, the first answer counts; ``gone`` when the one client went away (its turn is being
        cancelled); refused when nobody attached to answer in time."""
        try:
            return await self._first_answer(call, lambda _: True)
        except ConnectionError:
            return gone
        except TimeoutError as exc:
            raise PermissionDeniedError(
                f"nobody attached to answer {what} within {self._unattended_wait_s:g} s; this call was not run"
            ) from exc

    def elicitor(self) -> Elicitor | None:
        """Questions to the user, when an attached connection can ask them (or the last one could)."""
        if any(member.client.elicitor(self._session_id) is not None for member in self._members):
            return _AudienceElicitor(self)
        if not self._members and "form" in self._could:
            return _AudienceElicitor(self)
        return None

    async def ask_form(self, message: str, schema: dict[str, Any], *, tool_call_id: str | None) -> ElicitationAnswer:
        """A form question put to every attached connection that can show one; the first answer. Raises as
        ``open_link`` does (``elicit`` says it in the user's words)."""
        session_id = self._session_id

        async def call(client: ClientBridge) -> ElicitationAnswer:
            elicitor = client.elicitor(session_id)
            assert elicitor is not None
            return await elicitor.ask(message, schema, tool_call_id=tool_call_id)

        return await self._first_answer(call, lambda client: client.elicitor(session_id) is not None)

    def can_elicit(self, mode: Literal["form", "url"]) -> bool:
        """A question of this kind can be put now: to an attached connection that offers it, or — nobody attached to
        a shared session — to the next one to attach, when the last ones could answer it."""
        if any(_offers(member.client, self._session_id, mode) for member in self._members):
            return True
        return not self._members and self._wait_for_attach and mode in self._could

    async def open_link(
        self, message: str, url: str, elicitation_id: str, *, tool_call_id: str | None
    ) -> ElicitationAnswer:
        """An address for the user to open, offered to every attached connection that can open one; the first
        answer. ``ConnectionError`` with nobody to ask, ``TimeoutError`` when nobody attached in time, the editor's
        ``ToolError``."""
        session_id = self._session_id

        async def call(client: ClientBridge) -> ElicitationAnswer:
            links = client.links(session_id)
            assert links is not None
            return await links.open(message, url, elicitation_id, tool_call_id=tool_call_id)

        # An address tied to a tool call holds that call; one without (a sign-in page) is a background request.
        blocks = tool_call_id is not None
        return await self._first_answer(call, lambda client: client.links(session_id) is not None, blocks=blocks)

    async def link_completed(self, elicitation_id: str) -> None:
        """Tell every attached connection that opens addresses that ``elicitation_id`` is over (bounded each)."""
        for member in list(self._members):
            links = member.client.links(self._session_id)
            if links is not None:
                with anyio.move_on_after(self._send_timeout_s):
                    await links.completed(elicitation_id)

    async def elicit(self, message: str, schema: dict[str, Any], *, tool_call_id: str | None) -> ElicitationAnswer:
        try:
            return await self.ask_form(message, schema, tool_call_id=tool_call_id)
        except ConnectionError as exc:
            raise ToolError("the editor connection closed before the user answered") from exc
        except TimeoutError as exc:
            raise ToolError(f"nobody attached to answer the question within {self._unattended_wait_s:g} s") from exc

    async def _first_answer(
        self,
        call: Callable[[ClientBridge], Awaitable[T]],
        can_answer: Callable[[ClientBridge], bool],
        *,
        blocks: bool = True,
    ) -> T:
        """Put the question to every connection that can answer it, now and as they attach; the first answer (or
        error) is the result. ``ConnectionError`` when there is nobody to ask and no waiting for one;
        ``TimeoutError`` when nobody attached within ``unattended_wait_s``. While a question that ``blocks`` is open
        the foreground work ``requires_action``."""
        question: _Question[T] = _Question(call, can_answer, blocks=blocks)
        self._questions.append(question)
        unanswered: ConnectionError | TimeoutError | None = None
        if blocks and self.state.state == "running":
            await self.foreground(Foreground("requires_action"))
        try:
            async with anyio.create_task_group() as group:
                question.group = group
                for member in list(self._members):
                    if member.backlog is None:
                        question.put(member)
                try:
                    await self._settled(question)
                except (ConnectionError, TimeoutError) as exc:  # raised out of the group, not as a group of one
                    unanswered = exc
                group.cancel_scope.cancel()  # the requests to the others are withdrawn
        finally:
            self._questions.remove(question)
            if self.state.state == "requires_action" and not any(q.blocks for q in self._questions):
                with anyio.CancelScope(shield=True):
                    await self.foreground(Foreground("running"))
        if unanswered is not None:
            raise unanswered
        if question.error is not None:
            raise question.error
        return question.result  # type: ignore[return-value]

    async def _settled(self, question: _Question[Any]) -> None:
        while not question.answered.is_set():
            if question.asking:
                await question.changed.wait()
                continue
            if not self._wait_for_attach:
                raise ConnectionError("no client is attached to answer")
            if self._unattended_wait_s > 0:
                with anyio.fail_after(self._unattended_wait_s):
                    await self._wait_for_asked(question)
            else:
                await self._wait_for_asked(question)

    async def _wait_for_asked(self, question: _Question[Any]) -> None:
        """Until someone is asked (a connection that can answer attached) or it was answered."""
        while not question.asking and not question.answered.is_set():
            await self._joined.wait()

    # -- the origin's files and terminals --------------------------------------------------------------------

    def origin_files(self) -> EditorFiles | None:
        origin = self.origin
        return origin.files(self._session_id) if origin is not None and origin.present else None

    def origin_terminals(self) -> EditorTerminals | None:
        origin = self.origin
        return origin.terminals(self._session_id) if origin is not None and origin.present else None


def _event(item: SessionEvent | StoredEvent) -> SessionEvent:
    return item.event if isinstance(item, StoredEvent) else item


def _offers(client: ClientBridge, session_id: str, mode: str) -> bool:
    if mode == "form":
        return client.elicitor(session_id) is not None
    return client.links(session_id) is not None


class _AudienceElicitor:
    def __init__(self, audience: Audience):
        self._audience = audience

    async def ask(self, message: str, schema: dict[str, Any], *, tool_call_id: str | None) -> ElicitationAnswer:
        return await self._audience.elicit(message, schema, tool_call_id=tool_call_id)


class _NoHold:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


def _held(quiet: Callable[[], AbstractAsyncContextManager[None]] | None) -> AbstractAsyncContextManager[None]:
    return quiet() if quiet is not None else _NoHold()
