"""``RecordingClient``: an ACP client double that records every update and answers permission questions.

It is typed against ``acp.interfaces.Client``. Permission answers come from ``answers`` (option ids, used in
order; ``"cancelled"`` answers the cancelled outcome and ``"error"`` a JSON-RPC error) or from ``on_permission``
(which may wait, e.g. on an event, to hold a request open for cancel tests). Questions (``elicitation/create``) are
recorded and answered from ``on_elicitation`` (which may act first, e.g. open the address as a browser would) or
``elicitation_answers`` (``{"action": ..., "content": ...}``), by default cancelled; ``elicitation/complete``
notifications are recorded in ``completions``.
``cards`` and ``transcript`` fold the recorded frames into what an editor ends up showing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from acp import RequestError, schema

from probes.bare_client import BareClient

__all__ = ["PermissionCall", "RecordingClient", "data_of", "text_block"]


def data_of(error: RequestError) -> dict[str, Any]:
    """The ``data`` object of an ACP error answer (a failed turn's ``TurnFailure``)."""
    data = error.data
    assert isinstance(data, dict), f"the error carries no data object: {error}"
    return data


_CARD_KINDS = ("tool_call", "tool_call_update")


def text_block(text: str) -> schema.TextContentBlock:
    """A prompt's text content block."""
    return schema.TextContentBlock(type="text", text=text)


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
    elicitations: list[dict[str, Any]] = field(default_factory=list)
    """Every ``elicitation/create``: its message, the SDK's name for its mode (``kind``) and the mode's fields
    (session, tool call, requested schema)."""
    elicitation_answers: list[dict[str, Any]] = field(default_factory=list)
    on_elicitation: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] | None = None
    completions: list[str] = field(default_factory=list)
    """The ids of every ``elicitation/complete``, in order."""
    arrived: anyio.Event = field(default_factory=anyio.Event)
    """Set by the next update or permission request (then replaced by a fresh event); ``wait_for`` waits on it."""

    def _arrived(self) -> None:
        self.arrived.set()
        self.arrived = anyio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update.model_dump(mode="json", by_alias=True, exclude_none=True)))
        self._arrived()

    async def request_permission(
        self, session_id: str, tool_call: schema.ToolCallUpdate, options: list[schema.PermissionOption], **kwargs: Any
    ) -> schema.RequestPermissionResponse:
        call = PermissionCall(
            session_id,
            tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
            [o.model_dump(mode="json", by_alias=True, exclude_none=True) for o in options],
        )
        self.permissions.append(call)
        self._arrived()
        if self.on_permission is not None:
            answer = await self.on_permission(call)
        elif self.answers:
            answer = self.answers.pop(0)
        else:
            answer = "reject_once"
        if answer == "cancelled":
            return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
        if answer == "error":
            raise RequestError(-32603, "the permission dialog failed to open")
        return schema.RequestPermissionResponse(outcome=schema.AllowedOutcome(outcome="selected", option_id=answer))

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        fields = mode.model_dump(mode="json", by_alias=True, exclude_none=True)
        asked = {"message": message, "kind": type(mode).__name__, **fields}
        self.elicitations.append(asked)
        self._arrived()
        if self.on_elicitation is not None:
            answer = await self.on_elicitation(asked)
        else:
            answer = self.elicitation_answers.pop(0) if self.elicitation_answers else {"action": "cancel"}
        if answer["action"] == "accept":
            return schema.AcceptElicitationResponse(action="accept", content=answer.get("content"))
        if answer["action"] == "decline":
            return schema.DeclineElicitationResponse(action="decline")
        return schema.CancelElicitationResponse(action="cancel")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        self.completions.append(elicitation_id)
        self._arrived()

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [u["sessionUpdate"] for s, u in self.updates if session_id is None or s == session_id]

    def of_kind(self, kind: str, session_id: str | None = None) -> list[dict[str, Any]]:
        return [u for s, u in self.updates if u["sessionUpdate"] == kind and (session_id is None or s == session_id)]

    def text(self, session_id: str | None = None, kind: str = "agent_message_chunk") -> str:
        return "".join(u["content"].get("text", "") for u in self.of_kind(kind, session_id))

    def tool_frames(self, call_id: str, session_id: str | None = None) -> list[dict[str, Any]]:
        """The ``tool_call`` and ``tool_call_update`` frames of one tool call, in arrival order."""
        return [
            u
            for s, u in self.updates
            if u["sessionUpdate"] in _CARD_KINDS
            and u["toolCallId"] == call_id
            and (session_id is None or s == session_id)
        ]

    def cards(self, session_id: str | None = None) -> dict[str, dict[str, Any]]:
        """Each tool call's card as the editor ends up showing it: its frames merged in order, by ``toolCallId``
        (without the ``sessionUpdate`` key)."""
        cards: dict[str, dict[str, Any]] = {}
        for s, u in self.updates:
            if u["sessionUpdate"] in _CARD_KINDS and (session_id is None or s == session_id):
                cards.setdefault(u["toolCallId"], {}).update({k: v for k, v in u.items() if k != "sessionUpdate"})
        return cards

    def transcript(self, session_id: str) -> dict[str, Any]:
        """What the editor ends up showing for a session: text and thoughts per ``messageId``, the final tool cards,
        the plans, the titles and the compactions (each one's updates merged in order, by ``compactionId``)."""
        messages: dict[str, str] = {}
        compactions: dict[str, dict[str, Any]] = {}
        thoughts: dict[str, str] = {}
        plans: list[Any] = []
        titles: list[str] = []
        for s, u in self.updates:
            kind = u["sessionUpdate"]
            if s != session_id:
                continue
            if kind in ("agent_message_chunk", "agent_thought_chunk"):
                texts = messages if kind == "agent_message_chunk" else thoughts
                texts[u["messageId"]] = texts.get(u["messageId"], "") + u["content"]["text"]
            elif kind == "plan":
                plans.append(u["entries"])
            elif kind == "session_info_update" and "title" in u:
                titles.append(u["title"])
            elif kind == "compaction_update":
                compactions.setdefault(u["compactionId"], {}).update(
                    {k: v for k, v in u.items() if k != "sessionUpdate"}
                )
        return {
            "messages": messages,
            "thoughts": thoughts,
            "cards": self.cards(session_id),
            "plans": plans,
            "titles": titles,
            "compactions": compactions,
        }

    def clear(self) -> None:
        self.updates.clear()
        self.permissions.clear()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 30.0) -> None:
        """Wait (bounded) until ``predicate`` holds, re-checking after each update and permission request."""
        with anyio.fail_after(timeout):
            while not predicate():
                await self.arrived.wait()
