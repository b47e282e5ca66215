"""``ParentRelay``: how a child's traffic reaches the connections of the session at the top of its delegations (its
parent's, for a child of a client's session; the child audience's ``relay``).

To a client that advertised ``subagents``: the child's own updates under the child's id, and its questions too. To
any other: a progress line on the root's ``delegate`` card per step of a child of the root (a grandchild's steps
are not shown there), and its questions on that card, their titles naming the child. Nothing of a child reaches a
client that did not ask for child sessions. Everything goes through the root's audience (``Fanout``), in turn with
the rest of each connection's updates. It knows the views, not the session or ACP.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Literal, TypeVar

import anyio

from hermes_acp.core import DisplayBlock, SessionEvent, TextBlock, ToolCallStarted
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

from .lineage import SubagentLink
from .view import Send, Viewer

__all__ = ["CLOSE_WAIT_S", "SHOWN_STEPS", "ParentRelay", "progress_content", "progress_line", "progress_lines"]

T = TypeVar("T")
SHOWN_STEPS = 12
"""Progress lines a ``delegate`` card shows (the newest; a first line counts the rest)."""
CLOSE_WAIT_S = 5.0


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
    delegations (see the module docstring)."""

    def __init__(self, child_id: str, link: SubagentLink, on_event: Callable[[SessionEvent], None]):
        self._root = link.root
        self._child_id = child_id
        self._link = link
        self._on_event = on_event
        self._lines: list[str] = []

    def has(self, client: Viewer) -> bool:
        """A connection attached to the root that shows child sessions is attached to every descendant too."""
        return client.subagents and self._root.audience.has(client)

    async def emit_event(self, event: SessionEvent, *, live: bool, seq: int | None = None) -> None:
        self._on_event(event)
        line = progress_line(event) if self._link.depth == 1 else None  # a grandchild's steps: not on the card
        if line is not None:
            self._lines.append(line)
        content = progress_content(self._lines) if line is not None else None
        child_id, card = self._child_id, self._link.root_card

        def send_to(client: Viewer) -> Send | None:
            if client.subagents:

                async def child_update(_: UpdateSink) -> None:
                    await client.sink(child_id).emit_event(event, live=live, seq=seq)

                return child_update
            if content is None:
                return None

            async def card_line(root: UpdateSink) -> None:
                await root.emit_live(LiveToolProgress(card, content))

            return card_line

        await self._root.audience.deliver_each(send_to)

    async def emit_live(self, update: LiveUpdate) -> None:
        child_id = self._child_id

        def send_to(client: Viewer) -> Send | None:
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

        def send_to(client: Viewer) -> Send | None:
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
        each: Callable[[Callable[[Viewer], Awaitable[T]]], Awaitable[T]],
    ) -> T:
        named = replace(question, title=f"[{self._link.title}] {question.title}")
        on_card = replace(named, tool_call_id=self._link.root_card)
        child_id, root_id = self._child_id, self._root.id

        def ask(client: Viewer) -> Awaitable[T]:
            if client.subagents:
                return put(client.gate(child_id), named)
            return put(client.gate(root_id), on_card)

        await self.state("requires_action")
        try:
            return await each(ask)
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_WAIT_S):
                await self.state("running")
