"""The editor's file system, terminals and questions to the user over ACP: ``fs/read_text_file``,
``fs/write_text_file``, ``terminal/*`` and ``elicitation/create`` behind the tools' ``EditorFiles``,
``EditorTerminals`` and ``Elicitor`` ports, for one session; and ``elicitation/create`` in URL mode with
``elicitation/complete`` behind the session layer's ``EditorLinks`` (an address the user opens).

The bridge builds these only for what the client advertised; a client that offers just one of the two ``fs``
methods gets the other done on the local disk (``hermes_acp.tools.DISK``). Every request is bounded; an error the
client answers, a closed connection or a timeout becomes a ``ToolError`` naming the method and the path, so the
model hears what went wrong and the turn goes on (a write that timed out may have happened: outcome unknown).
Nothing here decides which paths go to the editor or whether a call is allowed.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from hermes_acp.errors import InvalidParamsError, OutcomeUnknownError, ToolError
from hermes_acp.jsonrpc.boundary import ClientRequestError
from hermes_acp.jsonrpc.dispatcher import Dispatcher
from hermes_acp.tools import DISK, EditorFiles, TerminalExit
from hermes_acp.tools.context import ElicitationAnswer

from .errors import RESOURCE_NOT_FOUND
from .wire import (
    CreateTerminalResult,
    ElicitationResult,
    ReadTextFileResult,
    TerminalExitResult,
    TerminalOutputResult,
    parse,
)

__all__ = [
    "ELICITATION_TIMEOUT_S",
    "FS_TIMEOUT_S",
    "TERMINAL_TIMEOUT_S",
    "AcpEditorFiles",
    "AcpEditorTerminals",
    "AcpElicitor",
    "AcpLinks",
]

FS_TIMEOUT_S = 30.0
TERMINAL_TIMEOUT_S = 30.0
"""Bound on every terminal request except ``wait_for_exit`` (the tool bounds that with the command's time limit)."""
ELICITATION_TIMEOUT_S = 600.0
"""How long a question to the user may stay open (the turn's cancel ends it sooner)."""
R = TypeVar("R", bound=BaseModel)


async def _call(
    dispatcher: Dispatcher,
    method: str,
    params: dict[str, Any],
    target: str,
    result: type[R] | None,
    *,
    timeout_s: float | None,
    mutating: bool = False,
) -> R | None:
    try:
        raw = await dispatcher.request(method, params, wait_s=timeout_s)
    except ClientRequestError as exc:
        if exc.code == RESOURCE_NOT_FOUND:
            raise ToolError(f"the editor says {target} does not exist ({method})") from exc
        raise ToolError(f"the editor refused {method} for {target}: {exc.describe()}") from exc
    except ConnectionError as exc:
        raise ToolError(f"the editor connection closed during {method} for {target}") from exc
    except TimeoutError as exc:
        message = f"the editor did not answer {method} for {target} within {timeout_s:g} s"
        if mutating:
            raise OutcomeUnknownError(
                f"{message}; the change may or may not have been made: read the file before trying again",
                code="timeout_outcome_unknown",
            ) from exc
        raise ToolError(message) from exc
    if result is None:
        return None
    try:
        return parse(result, raw)
    except InvalidParamsError as exc:
        raise ToolError(f"the editor's answer to {method} for {target} is unreadable: {exc}") from exc


class AcpEditorFiles:
    """``EditorFiles`` for one session; methods the client did not advertise fall back to the local disk."""

    def __init__(self, dispatcher: Dispatcher, session_id: str, *, can_read: bool, can_write: bool):
        self._dispatcher = dispatcher
        self._session_id = session_id
        self._can_read = can_read
        self._can_write = can_write
        self._disk: EditorFiles = DISK

    async def read_text(self, path: Path, *, line: int | None = None, limit: int | None = None) -> str:
        if not self._can_read:
            return await self._disk.read_text(path, line=line, limit=limit)
        params: dict[str, Any] = {"sessionId": self._session_id, "path": str(path)}
        if line is not None:
            params["line"] = line
        if limit is not None:
            params["limit"] = limit
        response = await _call(
            self._dispatcher, "fs/read_text_file", params, str(path), ReadTextFileResult, timeout_s=FS_TIMEOUT_S
        )
        assert response is not None
        return response.content

    async def write_text(self, path: Path, content: str, *, real: Path | None = None) -> None:
        if not self._can_write:
            await self._disk.write_text(path, content, real=real)
            return
        params = {"sessionId": self._session_id, "path": str(path), "content": content}
        await _call(
            self._dispatcher, "fs/write_text_file", params, str(path), None, timeout_s=FS_TIMEOUT_S, mutating=True
        )


def _exit(status: TerminalExitResult | None) -> TerminalExit | None:
    if status is None:
        return None
    return TerminalExit(exit_code=status.exit_code, signal=status.signal)


class AcpEditorTerminals:
    """``EditorTerminals`` for one session (the client advertised ``terminal``)."""

    def __init__(self, dispatcher: Dispatcher, session_id: str):
        self._dispatcher = dispatcher
        self._session_id = session_id

    def _params(self, terminal_id: str) -> dict[str, Any]:
        return {"sessionId": self._session_id, "terminalId": terminal_id}

    async def create(
        self, command: str, args: list[str], *, cwd: Path, env: dict[str, str], output_byte_limit: int
    ) -> str:
        params = {
            "sessionId": self._session_id,
            "command": command,
            "args": args,
            "cwd": str(cwd),
            "env": [{"name": k, "value": v} for k, v in env.items()],
            "outputByteLimit": output_byte_limit,
        }
        response = await _call(
            self._dispatcher, "terminal/create", params, command, CreateTerminalResult, timeout_s=TERMINAL_TIMEOUT_S
        )
        assert response is not None
        return response.terminal_id

    async def output(self, terminal_id: str) -> tuple[str, bool, TerminalExit | None]:
        response = await _call(
            self._dispatcher,
            "terminal/output",
            self._params(terminal_id),
            f"terminal {terminal_id}",
            TerminalOutputResult,
            timeout_s=TERMINAL_TIMEOUT_S,
        )
        assert response is not None
        return response.output, response.truncated, _exit(response.exit_status)

    async def wait_for_exit(self, terminal_id: str) -> TerminalExit:
        response = await _call(
            self._dispatcher,
            "terminal/wait_for_exit",
            self._params(terminal_id),
            f"terminal {terminal_id}",
            TerminalExitResult,
            timeout_s=None,
        )
        assert response is not None
        return TerminalExit(exit_code=response.exit_code, signal=response.signal)

    async def kill(self, terminal_id: str) -> None:
        await _call(
            self._dispatcher,
            "terminal/kill",
            self._params(terminal_id),
            f"terminal {terminal_id}",
            None,
            timeout_s=TERMINAL_TIMEOUT_S,
        )

    async def release(self, terminal_id: str) -> None:
        await _call(
            self._dispatcher,
            "terminal/release",
            self._params(terminal_id),
            f"terminal {terminal_id}",
            None,
            timeout_s=TERMINAL_TIMEOUT_S,
        )


class AcpElicitor:
    """``Elicitor`` (the client advertised ``elicitation.form``): a form-mode question tied to a session and the tool
    call that asks it, or, outside any session, to the request it belongs to (``authenticate``: ACP's request
    scope, ``{"requestId": …}``)."""

    def __init__(self, dispatcher: Dispatcher, session_id: str | None = None, *, request_id: str | int | None = None):
        self._dispatcher = dispatcher
        self._scope: dict[str, Any] = {"sessionId": session_id} if session_id is not None else {"requestId": request_id}

    async def ask(self, message: str, schema: dict[str, Any], *, tool_call_id: str | None) -> ElicitationAnswer:
        params: dict[str, Any] = {**self._scope, "mode": "form", "message": message, "requestedSchema": schema}
        if tool_call_id is not None and "sessionId" in self._scope:
            params["toolCallId"] = tool_call_id
        response = await _call(
            self._dispatcher,
            "elicitation/create",
            params,
            "a question to the user",
            ElicitationResult,
            timeout_s=ELICITATION_TIMEOUT_S,
        )
        assert response is not None
        if response.action == "accept":
            return ElicitationAnswer(action="accept", content=response.content or {})
        return ElicitationAnswer(action="decline" if response.action == "decline" else "cancel")


class AcpLinks:
    """``EditorLinks`` (the client advertised ``elicitation.url``): an address for the user to open, tied to a session
    and to the tool call that asks, and the notice that the interaction it stands for is over."""

    def __init__(self, dispatcher: Dispatcher, session_id: str):
        self._dispatcher = dispatcher
        self._session_id = session_id

    async def open(self, message: str, url: str, elicitation_id: str, *, tool_call_id: str | None) -> ElicitationAnswer:
        params: dict[str, Any] = {
            "sessionId": self._session_id,
            "mode": "url",
            "message": message,
            "elicitationId": elicitation_id,
            "url": url,
        }
        if tool_call_id is not None:
            params["toolCallId"] = tool_call_id
        response = await _call(
            self._dispatcher,
            "elicitation/create",
            params,
            "an address for the user",
            ElicitationResult,
            timeout_s=ELICITATION_TIMEOUT_S,
        )
        assert response is not None
        if response.action == "accept":
            return ElicitationAnswer(action="accept")
        return ElicitationAnswer(action="decline" if response.action == "decline" else "cancel")

    async def completed(self, elicitation_id: str) -> None:
        with contextlib.suppress(ConnectionError):  # a client that left has nothing left to close
            await self._dispatcher.notify("elicitation/complete", {"elicitationId": elicitation_id})
