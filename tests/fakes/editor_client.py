"""``EditorClient``: a ``RecordingClient`` that advertises and implements ``fs/*`` and ``terminal/*`` the way an
editor does, against the real disk and real subprocesses, recording every call.

- ``buffers`` are unsaved editor buffers (absolute path → text): reads see them before the disk, a write saves to
  disk and drops the buffer, like an editor saving a file.
- Terminals are real process groups (``start_new_session``); output keeps the last ``outputByteLimit`` bytes;
  ``kill`` ends the whole group and waits until it is gone; ``release`` kills what still runs and forgets the id.
- ``output_seen(text)`` lets a test wait (bounded) until a terminal printed something.
Pass ``client_capabilities=EditorClient.CAPABILITIES`` to ``open_pair``. Call ``aclose()`` at the end of a test.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import anyio
from acp import RequestError, schema

from hermes_acp.exec.process import group_alive

from .acp_client import RecordingClient

__all__ = ["EditorClient", "FakeTerminal"]


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


@dataclass
class FakeTerminal:
    __test__ = False

    terminal_id: str
    process: asyncio.subprocess.Process
    limit: int
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    reader: asyncio.Task[None] | None = None
    released: bool = False

    def status(self) -> schema.TerminalExitStatus | None:
        code = self.process.returncode
        if code is None:
            return None
        if code < 0:
            return schema.TerminalExitStatus(exit_code=None, signal=signal.Signals(-code).name)
        return schema.TerminalExitStatus(exit_code=code, signal=None)

    def text(self) -> str:
        return self.output.decode("utf-8", errors="replace")


@dataclass
class EditorClient(RecordingClient):
    __test__ = False
    CAPABILITIES: ClassVar[dict[str, Any]] = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    buffers: dict[str, str] = field(default_factory=dict)
    terminals: dict[str, FakeTerminal] = field(default_factory=dict)
    output_arrived: anyio.Event = field(default_factory=anyio.Event)

    def methods(self) -> list[str]:
        return [method for method, _ in self.calls]

    # -- fs ----------------------------------------------------------------------------------------------------

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> schema.ReadTextFileResponse:
        self.calls.append(("fs/read_text_file", {"path": path, "line": line, "limit": limit}))
        if path in self.buffers:
            text = self.buffers[path]
        else:
            try:
                text = Path(path).read_text(encoding="utf-8", errors="replace")
            except FileNotFoundError:
                raise RequestError.resource_not_found(path) from None
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = (line or 1) - 1
            end = None if limit is None else start + limit
            text = "".join(lines[start:end])
        return schema.ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> schema.WriteTextFileResponse | None:
        self.calls.append(("fs/write_text_file", {"path": path, "content": content}))
        try:
            Path(path).write_text(content, encoding="utf-8")
        except OSError as exc:
            raise RequestError.internal_error({"details": str(exc)}) from None
        self.buffers.pop(path, None)
        return schema.WriteTextFileResponse()

    # -- terminals ---------------------------------------------------------------------------------------------

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
        self.calls.append(("terminal/create", {"command": command, "args": args, "cwd": cwd}))
        environment = {**os.environ, **{v.name: v.value for v in env or []}}
        process = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            env=environment,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        terminal = FakeTerminal(f"term-{len(self.terminals) + 1}", process, output_byte_limit or 1_000_000)
        terminal.reader = asyncio.create_task(self._read(terminal))
        self.terminals[terminal.terminal_id] = terminal
        return schema.CreateTerminalResponse(terminal_id=terminal.terminal_id)

    async def _read(self, terminal: FakeTerminal) -> None:
        assert terminal.process.stdout is not None
        while chunk := await terminal.process.stdout.read(4096):
            terminal.output += chunk
            if len(terminal.output) > terminal.limit:
                del terminal.output[: len(terminal.output) - terminal.limit]
                terminal.truncated = True
            self.output_arrived.set()
            self.output_arrived = anyio.Event()

    def _terminal(self, terminal_id: str) -> FakeTerminal:
        terminal = self.terminals.get(terminal_id)
        if terminal is None or terminal.released:
            raise RequestError.invalid_params({"terminalId": f"unknown or released terminal {terminal_id}"})
        return terminal

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> schema.TerminalOutputResponse:
        self.calls.append(("terminal/output", {"terminalId": terminal_id}))
        terminal = self._terminal(terminal_id)
        return schema.TerminalOutputResponse(
            output=terminal.text(), truncated=terminal.truncated, exit_status=terminal.status()
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> schema.WaitForTerminalExitResponse:
        self.calls.append(("terminal/wait_for_exit", {"terminalId": terminal_id}))
        terminal = self._terminal(terminal_id)
        await terminal.process.wait()
        if terminal.reader is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(terminal.reader), 2)
        status = terminal.status()
        assert status is not None
        return schema.WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def _kill(self, terminal: FakeTerminal) -> None:
        pgid = terminal.process.pid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        with anyio.fail_after(5):
            await terminal.process.wait()
            # Grandchildren are not ours to wait for, and there is no event: /proc is polled (bounded above).
            while group_alive(pgid):  # noqa: ASYNC110
                await anyio.sleep(0.01)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> schema.KillTerminalResponse | None:
        self.calls.append(("terminal/kill", {"terminalId": terminal_id}))
        await self._kill(self._terminal(terminal_id))
        return schema.KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> schema.ReleaseTerminalResponse | None:
        self.calls.append(("terminal/release", {"terminalId": terminal_id}))
        terminal = self._terminal(terminal_id)
        if terminal.process.returncode is None:
            await self._kill(terminal)
        if terminal.reader is not None:
            terminal.reader.cancel()
        terminal.released = True
        return schema.ReleaseTerminalResponse()

    # -- what tests use ----------------------------------------------------------------------------------------

    async def output_seen(self, text: str, timeout: float = 10.0) -> FakeTerminal:
        """Wait (bounded) until some terminal's output contains ``text``."""
        with anyio.fail_after(timeout):
            while True:
                for terminal in self.terminals.values():
                    if text in terminal.text():
                        return terminal
                await self.output_arrived.wait()

    def unreleased(self) -> list[str]:
        return [t.terminal_id for t in self.terminals.values() if not t.released]

    @staticmethod
    def alive(pid: int) -> bool:
        return _alive(pid)

    async def aclose(self) -> None:
        """Kill whatever a failing test left running."""
        for terminal in self.terminals.values():
            if terminal.process.returncode is None or group_alive(terminal.process.pid):
                await self._kill(terminal)
            if terminal.reader is not None:
                terminal.reader.cancel()
