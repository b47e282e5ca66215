"""Subagents: the children a session's ``delegate`` calls run, as sessions of their own (docs/architecture.md §6.8).

A child is a real session in the store (``Provenance`` kind ``subagent``: its parent and the call that made it), with
its own log, history, context window, compaction and usage. It gets its parent's directories, MCP connections (the
same ones), sandbox and "always" rules, and the parent's mode (``general``) or ``read_only`` (``explore``): never
more rights than its parent. Its model is ``[agent] subagent_model`` or the parent's. It cannot ask the user
questions, and it delegates further only while ``[agent] subagent_depth`` allows.

- ``SubagentRunner`` is a session's ``Subagents`` port: it runs a child per ``delegate`` call, at most
  ``[agent] max_subagents`` at once, within a budget (model requests, tokens, wall time): past it the child is
  asked to report what it has, then stopped. It stores ``SubagentStarted`` in the parent's log (after the child's
  record, before any of its traffic) and ``SubagentEnded`` when it ends; the result is the child's report, or what
  it found so far with why it did not finish (never the parent's failure). A cancel of the parent cancels every
  child and settles its cards; a cancel of the child alone fails the call "cancelled by the user".
- ``ParentRelay`` is how a child's traffic reaches the parent's connections (``Audience``'s relay): to a client that
  advertised ``subagents``, the child's own updates under the child's id, and its questions too; to any other, a
  progress line on the parent's ``delegate`` card per child step, and its questions on that card, their titles
  naming the child. Nothing of a child reaches a client that did not ask for child sessions.
- ``ChildReplay`` is a child's log as a replay of its parent renders it in place (with ``subagents``: the child's
  traffic; without: the progress lines). A child cut short by a crash is repaired when its parent loads: its open
  work is "outcome unknown", never run again.

No ACP here: the shapes are the protocol layer's (``protocol/convert.py``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

import anyio
import structlog

from hermes_acp.core import (
    AssistantMessage,
    AssistantMessageStored,
    DisplayBlock,
    ModeId,
    SessionEvent,
    StopReason,
    SubagentEnded,
    SubagentOutcome,
    SubagentRole,
    SubagentStarted,
    TextBlock,
    TextPart,
    ToolCallStarted,
    Usage,
)
from hermes_acp.core.ids import new_session_id
from hermes_acp.core.modes import READ_ONLY_MODES
from hermes_acp.errors import ToolError
from hermes_acp.providers.catalog import CatalogModel
from hermes_acp.storage.base import PROVENANCE_KEY, Provenance, SessionRecord, SessionStore, utc_now
from hermes_acp.tools.delegate import Delegation, DelegationResult
from hermes_acp.turns.ports import (
    LiveSubagentState,
    LiveToolProgress,
    LiveUpdate,
    PermissionAnswer,
    PermissionChoice,
    PermissionGate,
    PermissionQuestion,
    UpdateSink,
)
from hermes_acp.turns.projection import SessionProjection, transcript_events
from hermes_acp.turns.recovery import recovery_events

from .ports import ClientBridge
from .switches import SWITCHES

if TYPE_CHECKING:
    from .session import Session

__all__ = [
    "REPORT_PROMPT",
    "ChildOpener",
    "ChildReplay",
    "ParentRelay",
    "SubagentLink",
    "SubagentRunner",
    "progress_lines",
    "subagent_prompt",
]

_log = structlog.get_logger("hermes_acp.sessions")
T = TypeVar("T")
SHOWN_STEPS = 12
"""Progress lines a ``delegate`` card shows (the newest; a first line counts the rest)."""
REPORT_WAIT_S = 60.0
"""Longest wait for the report a child is asked for once its budget is used up."""
CLOSE_WAIT_S = 5.0
_Budget = Literal["requests", "tokens", "time"]
_Send = Callable[[UpdateSink], Awaitable[None]]
_SUBAGENT_PROMPT = """

You are a subagent: another Hermes session delegated one task to you. You see that task only, not the conversation
it came from. Work on it with your tools, then end with a concise report for the session that delegated it: what
you found or did, with file paths and line numbers where they matter, and what is left undone. The report is all it
gets back, so make it complete but short. You cannot ask the user questions.
{role}{depth}"""
_ROLES: dict[SubagentRole, str] = {
    "explore": "Your role is explore: you may only read (search, read and list files); change nothing.",
    "general": "Your role is general: you may change files and run commands as the session's mode allows; say in"
    " your report what you changed.",
}
REPORT_PROMPT = (
    "Your budget for this task is used up ({why}). Stop working now: write your report with what you have found so"
    " far, and say what is left undone. Do not call any tools."
)
_WHY: dict[_Budget, str] = {
    "requests": "{n} model requests",
    "tokens": "{n:,} tokens",
    "time": "{n:g} s of wall time",
}


def subagent_prompt(role: SubagentRole, *, may_delegate: bool) -> str:
    """What a child's system prompt adds to its parent's (byte-identical for the child's life)."""
    depth = "" if may_delegate else " You cannot delegate further."
    return _SUBAGENT_PROMPT.format(role=_ROLES[role], depth=depth)


class ChildOpener(Protocol):
    """What a runner needs of the session manager: children are live sessions like any other (the manager's)."""

    async def open_child(self, record: SessionRecord, link: SubagentLink, relay: ParentRelay) -> Session: ...

    async def close_child(self, child: Session) -> None: ...


@dataclass(eq=False)
class SubagentLink:
    """A live child's tie to its parent: what it may do, and where it stands with its budget."""

    parent: Session
    tool_call_id: str
    turn_id: str
    title: str
    role: SubagentRole
    depth: int
    """1 for a child of a top-level session."""
    max_requests: int
    reporting: bool = False
    """Its budget is used up: the turn that writes the report gets no tools and one request."""

    def mode(self) -> ModeId:
        """``explore`` reads only; ``general`` follows the parent's mode as it is now (never more; a parent that
        plans gives ``read_only``: a child cannot hand the plan off)."""
        mode = self.parent.mode
        return "read_only" if self.role == "explore" or mode in READ_ONLY_MODES else mode

    @property
    def root(self) -> Session:
        """The session a client opened, at the top of the delegations: its connections see every descendant."""
        link = self.parent.link
        return link.root if link is not None else self.parent

    @property
    def root_card(self) -> str:
        """The root's ``delegate`` call this child works under (where a client without child sessions sees it)."""
        link = self.parent.link
        return link.root_card if link is not None else self.tool_call_id


@dataclass(frozen=True, slots=True)
class ChildReplay:
    """A child's log where its parent's replay reaches its ``SubagentStarted`` (its own children's in place too)."""

    session_id: str
    tool_call_id: str
    items: Sequence[SessionEvent | ChildReplay]
    tail: Sequence[LiveUpdate] = ()
    """What a running child streamed that is not in its log yet."""

    async def replay(self, client: ClientBridge, sink: UpdateSink) -> None:
        """With ``subagents``: the child's traffic under its own id; without: its steps on the ``delegate`` card
        (``sink`` is the client's sink for the parent; a grandchild's steps are not shown there)."""
        if client.subagents:
            child = client.sink(self.session_id)
            events = [item for item in self.items if not isinstance(item, ChildReplay)]
            shown = {id(event) for event in transcript_events(events)}
            for item in self.items:
                if isinstance(item, ChildReplay):
                    await item.replay_nested(client, child)
                elif id(item) in shown:
                    await child.emit_event(item, live=False)
            for update in self.tail:
                await child.emit_live(update)
            return
        lines = progress_lines([item for item in self.items if not isinstance(item, ChildReplay)])
        if lines:
            await sink.emit_live(LiveToolProgress(self.tool_call_id, progress_content(lines)))

    async def replay_nested(self, client: ClientBridge, sink: UpdateSink) -> None:
        """A grandchild's, inside its parent's replay: shown only to a client that shows child sessions."""
        if client.subagents:
            await self.replay(client, sink)


def progress_lines(events: Sequence[SessionEvent]) -> list[str]:
    """One line per step of a child (each tool call it made), for a client that does not show child sessions."""
    return [line for line in (progress_line(event) for event in events) if line is not None]


def progress_line(event: SessionEvent) -> str | None:
    return f"• {event.title}" if isinstance(event, ToolCallStarted) else None


def progress_content(lines: Sequence[str]) -> list[DisplayBlock]:
    shown = list(lines[-SHOWN_STEPS:])
    if len(lines) > SHOWN_STEPS:
        shown.insert(0, f"… {len(lines) - SHOWN_STEPS} earlier steps")
    return [TextBlock(text="\n".join(shown))]


class ParentRelay:
    """A child's updates and questions, fanned out over the connections of the session at the top of its
    delegations (its parent's, for a child of a client's session; see the module docstring)."""

    def __init__(self, child_id: str, link: SubagentLink, on_event: Callable[[SessionEvent], None]):
        self._root = link.root
        self._child_id = child_id
        self._link = link
        self._on_event = on_event
        self._lines: list[str] = []

    def has(self, client: ClientBridge) -> bool:
        """A connection attached to the root that shows child sessions is attached to every descendant too."""
        return client.subagents and self._root.audience.has(client)

    async def emit_event(self, event: SessionEvent, *, live: bool) -> None:
        self._on_event(event)
        line = progress_line(event) if self._link.depth == 1 else None  # a grandchild's steps: not on the card
        if line is not None:
            self._lines.append(line)
        content = progress_content(self._lines) if line is not None else None
        child_id, card = self._child_id, self._link.root_card

        def send_to(client: ClientBridge) -> _Send | None:
            if client.subagents:

                async def child_update(_: UpdateSink) -> None:
                    await client.sink(child_id).emit_event(event, live=live)

                return child_update
            if content is None:
                return None

            async def card_line(root: UpdateSink) -> None:
                await root.emit_live(LiveToolProgress(card, content))

            return card_line

        await self._root.audience.deliver_each(send_to)

    async def emit_live(self, update: LiveUpdate) -> None:
        child_id = self._child_id

        def send_to(client: ClientBridge) -> _Send | None:
            if not client.subagents:
                return None

            async def child_update(_: UpdateSink) -> None:
                await client.sink(child_id).emit_live(update)

            return child_update

        await self._root.audience.deliver_each(send_to)

    async def state(self, state: Literal["running", "requires_action"]) -> None:
        """The child's work state, on its immediate parent (clients that show child sessions)."""
        update = LiveSubagentState(self._child_id, state)
        parent_id = self._link.parent.id

        def send_to(client: ClientBridge) -> _Send | None:
            if not client.subagents:
                return None

            async def send(_: UpdateSink) -> None:
                await client.sink(parent_id).emit_live(update)

            return send

        await self._root.audience.deliver_each(send_to)

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
        """Every connection of the root is asked, the first answer counts: one that shows child sessions in the
        child's session, any other on the root's ``delegate`` card; either way the title names the child."""
        return await self._put(question, lambda gate, asked: gate.ask(asked), self._root.audience.ask_each)

    async def choose(
        self, question: PermissionQuestion, choices: Sequence[PermissionChoice], *, refusal: str
    ) -> str | None:
        """A question with choices, put as ``ask`` puts its questions."""
        return await self._put(
            question, lambda gate, asked: gate.choose(asked, choices, refusal=refusal), self._root.audience.choose_each
        )

    async def _put(
        self,
        question: PermissionQuestion,
        put: Callable[[PermissionGate, PermissionQuestion], Awaitable[T]],
        each: Callable[[Callable[[ClientBridge], Awaitable[T]]], Awaitable[T]],
    ) -> T:
        named = replace(question, title=f"[{self._link.title}] {question.title}")
        on_card = replace(named, tool_call_id=self._link.root_card)
        child_id, root_id = self._child_id, self._root.id

        def ask(client: ClientBridge) -> Awaitable[T]:
            if client.subagents:
                return put(client.gate(child_id), named)
            return put(client.gate(root_id), on_card)

        await self.state("requires_action")
        try:
            return await each(ask)
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_WAIT_S):
                await self.state("running")


@dataclass(eq=False)
class _Running:
    """One child while its delegation runs: the session, its link, and how its budget stands."""

    record_id: str
    link: SubagentLink
    max_tokens: int
    session: Session | None = None
    over: _Budget | None = None
    tokens: int = 0

    def observe(self, event: SessionEvent) -> None:
        """Count the tokens of each response the child stores; past its budget the child is stopped."""
        if not isinstance(event, AssistantMessageStored) or event.usage is None:
            return
        self.tokens += event.usage.input_tokens + event.usage.output_tokens
        if self.tokens >= self.max_tokens and not self.link.reporting:
            self.stop("tokens")

    def stop(self, why: _Budget) -> None:
        if self.over is None:
            self.over = why
        if self.session is not None:
            self.session.cancel()


class SubagentRunner:
    """A session's ``Subagents`` port (see the module docstring)."""

    def __init__(self, session: Session, opener: ChildOpener | None):
        self._session = session
        self._opener = opener
        self._slots = anyio.Semaphore(max(1, session.settings.agent.max_subagents))
        self._running: dict[str, _Running] = {}
        """By child session id."""

    @property
    def children(self) -> list[Session]:
        """The children running now."""
        return [running.session for running in self._running.values() if running.session is not None]

    @property
    def running(self) -> Mapping[str, _Running]:
        """The delegations running now, by child session id."""
        return self._running

    async def delegate(self, delegation: Delegation) -> DelegationResult:
        if self._opener is None:
            raise ToolError("this session cannot start subagents")
        async with self._slots:
            return await self._delegate(delegation, self._opener)

    async def _delegate(self, delegation: Delegation, opener: ChildOpener) -> DelegationResult:
        parent = self._session
        agent = parent.settings.agent
        model = self._child_model()
        link = SubagentLink(
            parent=parent,
            tool_call_id=delegation.tool_call_id,
            turn_id=delegation.turn_id,
            title=delegation.title,
            role=delegation.role,
            depth=parent.depth + 1,
            max_requests=agent.subagent_max_requests,
        )
        record = self._child_record(link, model)
        await parent.services.store.create_session(record)
        running = _Running(record.id, link, agent.subagent_max_tokens)
        await parent.recorder.record(
            SubagentStarted(
                turn_id=delegation.turn_id,
                tool_call_id=delegation.tool_call_id,
                session_id=record.id,
                title=delegation.title,
                description=_description(delegation),
                role=delegation.role,
                model_id=model.id if model is not None else "",
                cwd=record.cwd,
                additional_directories=[str(p) for p in parent.workspace.additional],
            )
        )
        self._running[record.id] = running
        child: Session | None = None
        try:
            relay = ParentRelay(record.id, link, running.observe)
            child = running.session = await opener.open_child(record, link, relay)
            outcome, stop, detail = await self._work(child, running, delegation, agent.subagent_timeout_s)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_WAIT_S * 2):
                await self._finish(running, "cancelled", "cancelled", "cancelled with its parent")
            raise
        except Exception as exc:  # the child could not start or its turn raised: the parent's call fails, not it
            _log.warning("a subagent failed", session_id=record.id, error=str(exc))
            detail = f"the subagent could not run: {exc}"
            usage = Usage()
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_WAIT_S * 2):
                usage = (await self._finish(running, "failed", None, detail)).usage
            found = report_of(child.projection) if child is not None else ""
            return DelegationResult(record.id, "failed", found, detail=detail, usage=usage)
        with anyio.CancelScope(shield=True):
            ended = await self._finish(running, outcome, stop, detail)
        return DelegationResult(record.id, outcome, report_of(child.projection), detail=detail, usage=ended.usage)

    async def _work(
        self, child: Session, running: _Running, delegation: Delegation, timeout_s: float
    ) -> tuple[SubagentOutcome, StopReason | None, str | None]:
        """Run the task, then (past a budget) the report; how it ended: outcome, the child's stop reason, why."""
        display: list[DisplayBlock] = [TextBlock(text=_task_text(delegation, child))]
        async with anyio.create_task_group() as timer:

            async def stop_in_time() -> None:
                await anyio.sleep(timeout_s)
                running.stop("time")

            timer.start_soon(stop_in_time)
            result = await child.task(display)
            timer.cancel_scope.cancel()
        link = running.link
        if result.stop_reason == "max_turn_requests" and running.over is None:
            running.over = "requests"
        over = running.over
        if over is None:
            if result.failure is not None:
                return "failed", result.stop_reason, f"its model request failed: {result.failure}"
            if result.stop_reason == "cancelled":
                return "cancelled", "cancelled", "cancelled by the user"
            return "completed", result.stop_reason, None
        limit = {"requests": link.max_requests, "tokens": running.max_tokens, "time": timeout_s}[over]
        why = _WHY[over].format(n=limit)
        link.reporting = True
        report: list[DisplayBlock] = [TextBlock(text=REPORT_PROMPT.format(why=why))]
        with anyio.move_on_after(REPORT_WAIT_S) as waiting:
            await child.task(report)
        if waiting.cancelled_caught:
            child.cancel()
        stops: dict[_Budget, StopReason | None] = {
            "tokens": "max_tokens",
            "requests": "max_turn_requests",
            "time": None,
        }
        return "budget", stops[over], f"it reached its budget of {why}"

    async def _finish(
        self, running: _Running, outcome: SubagentOutcome, stop: StopReason | None, detail: str | None
    ) -> SubagentEnded:
        """Close the child (its work cancelled and settled first, bounded), then store how it ended."""
        child, child_id, link = running.session, running.record_id, running.link
        if child is not None and self._opener is not None:
            await self._opener.close_child(child)
        self._running.pop(child_id, None)
        projection = child.projection if child is not None else SessionProjection()
        usage_by_model = dict(projection.usage_by_model)
        ended = SubagentEnded(
            turn_id=link.turn_id,
            tool_call_id=link.tool_call_id,
            session_id=child_id,
            outcome=outcome,
            stop_reason=stop,
            error=detail,
            usage=sum(usage_by_model.values(), Usage()),
            usage_by_model=usage_by_model,
        )
        await self._session.recorder.record(ended)
        return ended

    def cancel_all(self) -> None:
        """Cancel every child's work (the parent was cancelled: their delegations settle as cancelled)."""
        for running in self._running.values():
            if running.session is not None:
                running.session.cancel()

    @contextlib.asynccontextmanager
    async def quiet(self) -> AsyncIterator[None]:
        """Hold every running child's writes, and their children's (a connection catching up with the parent reads
        their logs too)."""
        async with contextlib.AsyncExitStack() as stack:
            for child in self.children:
                await stack.enter_async_context(child.hold_writes())
            yield

    async def expand(self, events: Sequence[SessionEvent]) -> list[SessionEvent | ChildReplay]:
        """The parent's log with each child's log in place, right after its ``SubagentStarted``, and theirs in
        theirs (a child cut short by a crash repaired first). Call it inside ``quiet``."""
        return await _expand(self._session.services.store, events, self._running, depth=0)

    def _child_model(self) -> CatalogModel | None:
        parent = self._session
        chosen = parent.settings.agent.subagent_model
        model = parent.configured_model(chosen) if chosen else None
        return model or parent.current_model()

    def _child_record(self, link: SubagentLink, model: CatalogModel | None) -> SessionRecord:
        parent = self._session
        now = utc_now()
        provenance = Provenance(kind="subagent", session_id=parent.id, at=now, tool_call_id=link.tool_call_id)
        return SessionRecord(
            id=new_session_id(),
            cwd=parent.record.cwd,
            created_at=now,
            updated_at=now,
            mode_id=link.mode(),
            model_id=model.id if model is not None else None,
            title=link.title,
            parent_id=parent.id,
            meta={
                "additional_directories": [str(p) for p in parent.workspace.additional],
                PROVENANCE_KEY: provenance.as_meta(),
                "subagent": {"role": link.role, "depth": link.depth},
                **{switch.id: parent.record.meta[switch.id] for switch in SWITCHES if switch.id in parent.record.meta},
            },
        )


MAX_REPLAY_DEPTH = 8
"""Nesting a replay follows at most (``[agent] subagent_depth`` allows 4; a hand-written log could loop)."""


async def _expand(
    store: SessionStore, events: Sequence[SessionEvent], running: Mapping[str, _Running], *, depth: int
) -> list[SessionEvent | ChildReplay]:
    out: list[SessionEvent | ChildReplay] = []
    for event in events:
        out.append(event)
        if isinstance(event, SubagentStarted) and depth < MAX_REPLAY_DEPTH:
            replayed = await _child_replay(store, event, running.get(event.session_id), depth=depth)
            if replayed is not None:
                out.append(replayed)
    return out


async def _child_replay(
    store: SessionStore, started: SubagentStarted, running: _Running | None, *, depth: int
) -> ChildReplay | None:
    child_events = [stored.event for stored in await store.load_events(started.session_id)]
    live = running.session if running is not None else None
    if live is not None:
        items = await _expand(store, child_events, live.subagents.running, depth=depth + 1)
        return ChildReplay(started.session_id, started.tool_call_id, items, live.audience.tail())
    if not child_events and await store.get_session(started.session_id) is None:
        return None  # the server stopped between the record and the event: there is nothing to show
    projection = SessionProjection()
    for event in child_events:
        projection.apply(event)
    repairs = recovery_events(projection)
    if repairs:
        _log.info("repairing an interrupted subagent", session_id=started.session_id, events=len(repairs))
        stored = await store.append_events(started.session_id, repairs)
        child_events.extend(s.event for s in stored)
    items = await _expand(store, child_events, {}, depth=depth + 1)
    return ChildReplay(started.session_id, started.tool_call_id, items)


def report_of(projection: SessionProjection) -> str:
    """The child's report: the text of its last response that has any."""
    for message in reversed(projection.history):
        if isinstance(message, AssistantMessage):
            text = "".join(p.text for p in message.parts if isinstance(p, TextPart)).strip()
            if text:
                return text
    return ""


def _task_text(delegation: Delegation, child: Session) -> str:
    if not delegation.focus:
        return delegation.task
    cwd = child.workspace.cwd
    shown = ", ".join(
        os.path.relpath(path, cwd) if path.is_relative_to(cwd) else str(path) for path in delegation.focus
    )
    return f"{delegation.task}\n\nFocus on: {shown}"


def _description(delegation: Delegation) -> str:
    first = delegation.task.strip().splitlines()[0] if delegation.task.strip() else delegation.title
    return first if len(first) <= 200 else first[:199].rstrip() + "…"
