"""``RecordingClient``: an ACP client double that records every update and answers permission questions.

It is typed against ``acp.interfaces.Client``. Permission answers come from ``answers`` (option ids, used in
order) or from ``on_permission``; ``hold_permissions`` makes requests wait until released (for cancel tests).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from acp import RequestError, schema
from acp.interfaces import Agent

__all__ = ["PermissionCall", "RecordingClient"]


@dataclass
class PermissionCall:
    session_id: str
    tool_call: dict[str, Any]
    options: list[dict[str, Any]]


@dataclass
class RecordingClient:
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

    def on_connect(self, conn: Agent) -> None:
        return None

    # -- a client without fs/terminal support answers method-not-found (it also does not advertise them) -------

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> schema.ReadTextFileResponse:
        raise RequestError.method_not_found("fs/read_text_file")

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> schema.WriteTextFileResponse | None:
        raise RequestError.method_not_found("fs/write_text_file")

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[schema.EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> schema.CreateTerminalResponse:
        raise RequestError.method_not_found("terminal/create")

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> schema.TerminalOutputResponse:
        raise RequestError.method_not_found("terminal/output")

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> schema.ReleaseTerminalResponse | None:
        raise RequestError.method_not_found("terminal/release")

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> schema.WaitForTerminalExitResponse:
        raise RequestError.method_not_found("terminal/wait_for_exit")

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> schema.KillTerminalResponse | None:
        raise RequestError.method_not_found("terminal/kill")

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("elicitation/create")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    # -- what tests read --------------------------------------------------------------------------------------

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
