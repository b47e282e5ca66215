"""What subagents see of the connections a session is attached to, as small protocols.

``Viewer`` is one client connection as a child's traffic needs it (does it show child sessions; its sink and gate for
a session id); ``Fanout`` is the audience of the session at the top of the delegations, through which a child's
updates and questions reach every connection attached there, each in turn with the rest of its updates; ``Relay`` is
where a child's audience sends its traffic beside its own connections (``relay.ParentRelay``). The session layer's
``ClientBridge`` and ``Audience`` meet the first two. Nothing here knows the session, the audience or ACP.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from hermes_acp.core import SessionEvent
from hermes_acp.turns.ports import (
    LiveUpdate,
    PermissionAnswer,
    PermissionChoice,
    PermissionGate,
    PermissionQuestion,
    UpdateSink,
)

__all__ = ["Fanout", "Relay", "Send", "Viewer"]

Send = Callable[[UpdateSink], Awaitable[None]]
"""What one connection is sent, given its sink for the session it is attached to."""


class Viewer(Protocol):
    @property
    def subagents(self) -> bool:
        """The client shows child sessions (their updates and questions under the child's id)."""
        ...

    def sink(self, session_id: str) -> UpdateSink: ...

    def gate(self, session_id: str) -> PermissionGate: ...


class Fanout(Protocol):
    def has(self, client: Viewer) -> bool:
        """``client`` is attached."""
        ...

    async def deliver_each(self, send_to: Callable[[Viewer], Send | None]) -> None:
        """Send each attached connection what ``send_to`` makes for it (None: nothing)."""
        ...

    async def ask_each(self, ask: Callable[[Viewer], Awaitable[PermissionAnswer]]) -> PermissionAnswer:
        """A permission question put to every attached connection; the first answer."""
        ...

    async def choose_each(self, choose: Callable[[Viewer], Awaitable[str | None]]) -> str | None:
        """A question with choices put to every attached connection; the first answer."""
        ...


class Relay(Protocol):
    """Where a subagent's traffic goes beside its own connections: its parent's."""

    def has(self, client: Viewer) -> bool: ...

    async def emit_event(self, event: SessionEvent, *, live: bool, seq: int | None = None) -> None: ...

    async def emit_live(self, update: LiveUpdate) -> None: ...

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer: ...

    async def choose(
        self, question: PermissionQuestion, choices: Sequence[PermissionChoice], *, refusal: str
    ) -> str | None: ...
