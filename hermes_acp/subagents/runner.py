"""``SubagentRunner``: a session's ``Subagents`` port, the children its ``delegate`` calls run as sessions of their own
(docs/architecture.md §6.8).

A child is a real session in the store (``Provenance`` kind ``subagent``: its parent and the call that made it), with
its own log, history, context window, compaction and usage. It gets its parent's directories, MCP connections (the
same ones), sandbox and "always" rules, and the parent's mode (``general``) or ``read_only`` (``explore``): never
more rights than its parent. Its model is ``[agent] subagent_model`` or the parent's. It cannot ask the user
questions, and it delegates further only while ``[agent] subagent_depth`` allows.

The runner runs a child per ``delegate`` call, at most ``[agent] max_subagents`` at once, within a budget (model
requests, tokens, wall time): past it the child is asked to report what it has, then stopped. It stores
``SubagentStarted`` in the parent's log (after the child's record, before any of its traffic) and ``SubagentEnded``
when it ends; the result is the child's report, or what it found so far with why it did not finish (never the
parent's failure). A cancel of the parent cancels every child and settles its cards; a cancel of the child alone
fails the call "cancelled by the user". It sees the parent, the children and the session manager through the views
of ``lineage``; it does not import the session layer, and knows no ACP.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import anyio
import structlog

from hermes_acp.core import (
    AssistantMessage,
    AssistantMessageStored,
    DisplayBlock,
    SessionEvent,
    StopReason,
    SubagentEnded,
    SubagentOutcome,
    SubagentStarted,
    TextBlock,
    TextPart,
    Usage,
)
from hermes_acp.errors import ToolError
from hermes_acp.providers.catalog import CatalogModel
from hermes_acp.storage.base import StoredEvent
from hermes_acp.tools.delegation import Delegation, DelegationResult
from hermes_acp.turns.projection import SessionProjection

from .lineage import ChildOpener, ChildView, ParentView, SubagentLink
from .relay import CLOSE_WAIT_S, ParentRelay
from .replay import ChildReplay, expand

__all__ = ["REPORT_PROMPT", "SubagentRunner", "report_of"]

_log = structlog.get_logger("hermes_acp.sessions")
REPORT_WAIT_S = 60.0
"""Longest wait for the report a child is asked for once its budget is used up."""
_Budget = Literal["requests", "tokens", "time"]
REPORT_PROMPT = (
    "Your budget for this task is used up ({why}). Stop working now: write your report with what you have found so"
    " far, and say what is left undone. Do not call any tools."
)
_WHY: dict[_Budget, str] = {
    "requests": "{n} model requests",
    "tokens": "{n:,} tokens",
    "time": "{n:g} s of wall time",
}


@dataclass(eq=False)
class _Running:
    """One child while its delegation runs: the session, its link, and how its budget stands."""

    record_id: str
    link: SubagentLink
    max_tokens: int
    session: ChildView | None = None
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

    def __init__(self, parent: ParentView, opener: ChildOpener | None):
        self._session = parent
        self._opener = opener
        self._slots = anyio.Semaphore(max(1, parent.services.settings.agent.max_subagents))
        self._running: dict[str, _Running] = {}
        """By child session id."""

    @property
    def children(self) -> list[ChildView]:
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
        agent = parent.services.settings.agent
        model = self._child_model()
        link = SubagentLink(
            parent=parent,
            tool_call_id=delegation.tool_call_id,
            turn_id=delegation.turn_id,
            title=delegation.title,
            role=delegation.role,
            depth=parent.lineage.depth + 1,
            max_requests=agent.subagent_max_requests,
        )
        record = opener.child_record(parent, link, model)
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
        child: ChildView | None = None
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
            found = report_of(child.recorder.projection) if child is not None else ""
            return DelegationResult(record.id, "failed", found, detail=detail, usage=usage)
        with anyio.CancelScope(shield=True):
            ended = await self._finish(running, outcome, stop, detail)
        return DelegationResult(
            record.id, outcome, report_of(child.recorder.projection), detail=detail, usage=ended.usage
        )

    async def _work(
        self, child: ChildView, running: _Running, delegation: Delegation, timeout_s: float
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
        failure = result.failure
        if failure is not None and failure.kind == "budget":  # the session's caps: no report (it would spend more)
            return "budget", result.stop_reason, failure.message
        if result.stop_reason == "max_turn_requests" and running.over is None:
            running.over = "requests"
        over = running.over
        if over is None:
            if failure is not None and failure.is_error:
                return "failed", result.stop_reason, f"its model request failed: {failure.message}"
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
        projection = child.recorder.projection if child is not None else SessionProjection()
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
    async def held(self) -> AsyncIterator[None]:
        """The parent's writes held, and every running child's, and their children's (a connection catching up with
        the parent reads their logs too)."""
        async with self._session.recorder.quiet(), contextlib.AsyncExitStack() as stack:
            for child in self.children:
                await stack.enter_async_context(child.subagents.held())
            yield

    async def expand(
        self, events: Sequence[SessionEvent | StoredEvent]
    ) -> list[SessionEvent | StoredEvent | ChildReplay]:
        """The parent's log with each child's log in place, right after its ``SubagentStarted``, and theirs in
        theirs (a child cut short by a crash repaired first). Call it inside ``held``."""
        return await expand(self._session.services.store, events, self._running)

    def _child_model(self) -> CatalogModel | None:
        parent = self._session
        chosen = parent.services.settings.agent.subagent_model
        model = parent.options.configured_model(chosen) if chosen else None
        return model or parent.options.current_model()


def report_of(projection: SessionProjection) -> str:
    """The child's report: the text of its last response that has any."""
    for message in reversed(projection.history):
        if isinstance(message, AssistantMessage):
            text = "".join(p.text for p in message.parts if isinstance(p, TextPart)).strip()
            if text:
                return text
    return ""


def _task_text(delegation: Delegation, child: ChildView) -> str:
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
