"""The editor's file system and terminals over ACP: ``fs/read_text_file``, ``fs/write_text_file`` and
``terminal/*`` behind the tools' ``EditorFiles`` / ``EditorTerminals`` ports, for one session.

The bridge builds these only for what the client advertised; a client that offers just one of the two ``fs``
methods gets the other done on the local disk (``hermes_acp.tools.DISK``). Every request is bounded; an error the
client answers, a closed connection or a timeout becomes a ``ToolError`` naming the method and the path, so the
model hears what went wrong and the turn goes on (a write that timed out may have happened: outcome unknown).
Nothing here decides which paths go to the editor or whether a call is allowed.
"""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

import anyio
from acp import RequestError, schema
from acp.agent.connection import AgentSideConnection

from hermes_acp.errors import OutcomeUnknownError, ToolError
from hermes_acp.tools import DISK, EditorFiles, TerminalExit

__all__ = ["FS_TIMEOUT_S", "TERMINAL_TIMEOUT_S", "AcpEditorFiles", "AcpEditorTerminals"]

FS_TIMEOUT_S = 30.0
TERMINAL_TIMEOUT_S = 30.0
"""Bound on every terminal request except ``wait_for_exit`` (the tool bounds that with the command's time limit)."""
T = TypeVar("T")


def _describe(exc: RequestError) -> str:
    detail = f": {exc.data}" if exc.data else ""
    return f"{exc}{detail} (error {exc.code})"


async def _call(method: str, target: str, call: Awaitable[T], *, timeout_s: float | None, mutating: bool = False) -> T:
    try:
        if timeout_s is None:
            return await call
        with anyio.fail_after(timeout_s):
            return await call
    except RequestError as exc:
        if exc.code == -32002:
            raise ToolError(f"the editor says {target} does not exist ({method})") from exc
        raise ToolError(f"the editor refused {method} for {target}: {_describe(exc)}") from exc
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


class AcpEditorFiles:
    """``EditorFiles`` for one session; methods the client did not advertise fall back to the local disk."""

    def __init__(self, conn: AgentSideConnection, session_id: str, *, can_read: bool, can_write: bool):
        self._conn = conn
        self._session_id = session_id
        self._can_read = can_read
        self._can_write = can_write
        self._disk: EditorFiles = DISK

    async def read_text(self, path: Path, *, line: int | None = None, limit: int | None = None) -> str:
        if not self._can_read:
            return await self._disk.read_text(path, line=line, limit=limit)
        response = await _call(
            "fs/read_text_file",
            str(path),
            self._conn.read_text_file(session_id=self._session_id, path=str(path), line=line, limit=limit),
            timeout_s=FS_TIMEOUT_S,
        )
        return response.content

    async def write_text(self, path: Path, content: str) -> None:
        if not self._can_write:
            await self._disk.write_text(path, content)
            return
        await _call(
            "fs/write_text_file",
            str(path),
            self._conn.write_text_file(session_id=self._session_id, path=str(path), content=content),
            timeout_s=FS_TIMEOUT_S,
            mutating=True,
        )


def _exit(status: schema.TerminalExitStatus | None) -> TerminalExit | None:
    if status is None:
        return None
    return TerminalExit(exit_code=status.exit_code, signal=status.signal)


class AcpEditorTerminals:
    """``EditorTerminals`` for one session (the client advertised ``terminal``)."""

    def __init__(self, conn: AgentSideConnection, session_id: str):
        self._conn = conn
        self._session_id = session_id

    async def create(
        self, command: str, args: list[str], *, cwd: Path, env: dict[str, str], output_byte_limit: int
    ) -> str:
        response = await _call(
            "terminal/create",
            command,
            self._conn.create_terminal(
                session_id=self._session_id,
                command=command,
                args=args,
                cwd=str(cwd),
                env=[schema.EnvVariable(name=k, value=v) for k, v in env.items()],
                output_byte_limit=output_byte_limit,
            ),
            timeout_s=TERMINAL_TIMEOUT_S,
        )
        return response.terminal_id

    async def output(self, terminal_id: str) -> tuple[str, bool, TerminalExit | None]:
        response = await _call(
            "terminal/output",
            f"terminal {terminal_id}",
            self._conn.terminal_output(session_id=self._session_id, terminal_id=terminal_id),
            timeout_s=TERMINAL_TIMEOUT_S,
        )
        return response.output, response.truncated, _exit(response.exit_status)

    async def wait_for_exit(self, terminal_id: str) -> TerminalExit:
        response = await _call(
            "terminal/wait_for_exit",
            f"terminal {terminal_id}",
            self._conn.wait_for_terminal_exit(session_id=self._session_id, terminal_id=terminal_id),
            timeout_s=None,
        )
        return TerminalExit(exit_code=response.exit_code, signal=response.signal)

    async def kill(self, terminal_id: str) -> None:
        await _call(
            "terminal/kill",
            f"terminal {terminal_id}",
            self._conn.kill_terminal(session_id=self._session_id, terminal_id=terminal_id),
            timeout_s=TERMINAL_TIMEOUT_S,
        )

    async def release(self, terminal_id: str) -> None:
        await _call(
            "terminal/release",
            f"terminal {terminal_id}",
            self._conn.release_terminal(session_id=self._session_id, terminal_id=terminal_id),
            timeout_s=TERMINAL_TIMEOUT_S,
        )
