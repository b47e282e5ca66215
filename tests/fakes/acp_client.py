"""``RecordingClient``: an ACP client double that records every update and answers permission questions.

It is typed against ``acp.interfaces.Client``. Permission answers come from ``answers`` (option ids, used in
order) or from ``on_permission`` (which may wait, e.g. on an event, to hold a request open for cancel tests).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from acp import schema

from probes.bare_client import BareClient

__all__ = ["PermissionCall", "RecordingClient"]


@dataclass
class PermissionCall:
    session_id: str
    tool_call: dict[str, Any]
    options: list[dict[str, Any]]


@dataclass
class RecordingClient(BareClient):
    __test__ = False

    updates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    permissions: list[PermissionCall] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    """Option ids to answer permission requests with, in order; "cancelled" answers with the cancelled outcome."""
    on_permission: Callable[[PermissionCall], Awaitable[str]] | None = None
    permission_asked: anyio.Event = field(default_factory=anyio.Event)
    update_arrived: anyio.Event = field(default_factory=anyio.Event)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update.model_dump(mode="json", by_alias=True, exclude_none=True)))
        self.update_arrived.set()
        self.update_arrived = anyio.Event()

    async def request_permission(
        self, session_id: str, tool_call: schema.ToolCallUpdate, options: list[schema.PermissionOption], **kwargs: Any
    ) -> schema.RequestPermissionResponse:
        call = PermissionCall(
            session_id,
            tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
            [o.model_dump(mode="json", by_alias=True, exclude_none=True) for o in options],
        )
        self.permissions.append(call)
        self.permission_asked.set()
        if self.on_permission is not None:
            answer = await self.on_permission(call)
        elif self.answers:
            answer = self.answers.pop(0)
        else:
            answer = "reject_once"
        if answer == "cancelled":
            return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
        return schema.RequestPermissionResponse(outcome=schema.AllowedOutcome(outcome="selected", option_id=answer))

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [u["sessionUpdate"] for s, u in self.updates if session_id is None or s == session_id]

    def of_kind(self, kind: str, session_id: str | None = None) -> list[dict[str, Any]]:
        return [u for s, u in self.updates if u["sessionUpdate"] == kind and (session_id is None or s == session_id)]

    def text(self, session_id: str | None = None, kind: str = "agent_message_chunk") -> str:
        return "".join(u["content"].get("text", "") for u in self.of_kind(kind, session_id))

    def clear(self) -> None:
        self.updates.clear()
        self.permissions.clear()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        """Wait (bounded) until ``predicate`` holds, re-checking after each update."""
        with anyio.fail_after(timeout):
            while not predicate():
                await self.update_arrived.wait()
