"""The stdio transport to an MCP server: its messages read within a bound, its environment exactly what we give it.

It replaces the SDK's ``stdio_client`` for two reasons: the SDK joins each chunk onto the unread rest of a line
(``(buffer + chunk).split("\\n")``), so one 200 MiB line costs minutes of copying at full CPU before the request it
answers is given up as timed out (and a read-only one is sent again although the server had answered); and it
merges its own idea of a safe environment under the one we pass. Here lines come out of ``_bounded.BoundedLines``
in one pass (a line over ``MAX_MESSAGE_BYTES`` becomes ``_bounded.cut_message``'s answer), and the process gets
the environment it is given, nothing else.

Otherwise it behaves as the SDK's transport does: the server starts in its own process group (cwd and stderr as
given), one task reads its stdout and one writes its stdin, a line that is not a JSON-RPC message is handed on as
the exception for the session to log, and closing is the MCP shutdown sequence (stdin closed, a grace, SIGTERM to
the group, SIGKILL), shielded and bounded, so a cancelled caller never leaves a live server behind.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, TextIO

import anyio
import structlog
from anyio.abc import Process
from mcp import types
from mcp.shared.message import SessionMessage

from hermes_acp.platform import processes

from ._bounded import BoundedLines, Cut, cut_message

__all__ = ["stdio_transport"]

EXIT_GRACE_S = 2.0
"""How long the server may take to exit once its stdin is closed, and again after SIGTERM."""
_POLL_S = 0.01
_log = structlog.get_logger("hermes_acp.mcp")


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


def _decoded(item: bytes | Cut, server: str) -> SessionMessage | Exception | None:
    """One line as what the session reads; None for a line to skip (blank, or a cut message answering nothing)."""
    if isinstance(item, Cut):
        message = cut_message(item)
        _log.warning(
            "an MCP server sent a message over the size limit; it was cut",
            server=server,
            bytes=item.total,
            answered=message is not None,
        )
        return None if message is None else _parse(message)
    if not item.strip():
        return None
    return _parse(item.removesuffix(b"\r"))


async def _exited(process: Process, within_s: float) -> bool:
    """Whether the process exited within ``within_s`` (its ``returncode`` polled: ``wait`` would also wait for a
    grandchild that holds the pipes, and there is no event for the exit alone)."""
    with anyio.move_on_after(within_s):
        while process.returncode is None:  # noqa: ASYNC110
            await anyio.sleep(_POLL_S)
        return True
    return False


async def _stop(process: Process) -> None:
    """The MCP shutdown sequence (shielded by the caller)."""
    if process.stdin is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    tree = processes.tree_of(process.pid)
    if tree.needs_refresh:
        await anyio.to_thread.run_sync(tree.refresh)
    if not await _exited(process, EXIT_GRACE_S):
        tree.terminate()
        if not await _exited(process, EXIT_GRACE_S):
            tree.kill()
            await _exited(process, EXIT_GRACE_S)
    tree.kill()  # anything of its tree still there
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.aclose()


@contextlib.asynccontextmanager
async def stdio_transport(
    name: str, command: str, args: list[str], *, env: Mapping[str, str], cwd: Path | None, errlog: TextIO
) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server and yield the (read, write) streams the SDK's client speaks over. Raises ``OSError`` when it
    cannot be started."""
    process = await anyio.open_process(
        [processes.resolve_command(command, env.get("PATH")), *args],
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        **processes.spawn_options(),
    )
    read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        assert process.stdout is not None
        lines = BoundedLines()
        async with read_in:
            try:
                async for chunk in process.stdout:
                    for item in lines.feed(chunk):
                        decoded = _decoded(item, name)
                        if decoded is not None:
                            await read_in.send(decoded)
                for item in lines.flush():
                    decoded = _decoded(item, name)
                    if decoded is not None:
                        await read_in.send(decoded)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return

    async def write() -> None:
        assert process.stdin is not None
        async with write_out:
            try:
                async for message in write_out:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode("utf-8", "replace") + b"\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await read_in.aclose()  # the session sees the connection end instead of a request hanging

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write)
        try:
            yield read_out, write_in
        finally:
            with anyio.CancelScope(shield=True):
                await write_in.aclose()
                await _stop(process)
                await read_out.aclose()
            group.cancel_scope.cancel()
