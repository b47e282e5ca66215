"""Running one command in a terminal the editor owns (the ``EditorTerminals`` port: ACP ``terminal/*``).

create → show the terminal in the tool call → wait for the exit (``wait_for_exit``, with ``output`` polled beside
it, which also notices an exit a client forgets to report) → read the final output → release. The terminal is
always released: in a ``finally``, shielded and bounded, killed first when the command did not finish (timeout or
cancel). Client failures are ``ToolError``s raised by the port's implementation; the last polled output survives a
client that fails after a kill. Nothing here knows ACP or approvals.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from hermes_acp.core import DisplayBlock, TerminalBlock
from hermes_acp.errors import ToolError
from hermes_acp.exec.limits import CommandLimits
from hermes_acp.exec.process import CommandResult, watch_limits

from .context import EditorTerminals, TerminalExit

__all__ = ["CLIENT_CALL_TIMEOUT_S", "POLL_INTERVAL_S", "run_in_client_terminal"]

POLL_INTERVAL_S = 0.5
CLIENT_CALL_TIMEOUT_S = 10.0
"""Bound on each terminal/output, kill and release request (the wait for the exit is bounded by the time limit)."""


@dataclass
class _Seen:
    output: str = ""
    truncated: bool = False
    exit: TerminalExit | None = None
    error: ToolError | None = None


async def _watch(terminals: EditorTerminals, terminal_id: str, seen: _Seen) -> None:
    """Until the command exits: ``wait_for_exit`` and, beside it, ``output`` every ``POLL_INTERVAL_S``."""
    async with anyio.create_task_group() as tg:

        async def wait() -> None:
            try:
                seen.exit = await terminals.wait_for_exit(terminal_id)
            except ToolError as exc:
                seen.error = exc
            tg.cancel_scope.cancel()

        async def poll() -> None:
            while True:
                await anyio.sleep(POLL_INTERVAL_S)
                try:
                    with anyio.fail_after(CLIENT_CALL_TIMEOUT_S):
                        output, truncated, status = await terminals.output(terminal_id)
                except (ToolError, TimeoutError):
                    continue
                seen.output, seen.truncated = output, truncated
                if status is not None:
                    seen.exit = seen.exit or status
                    tg.cancel_scope.cancel()

        tg.start_soon(wait)
        tg.start_soon(poll)


async def _bounded(call: Awaitable[None]) -> None:
    with anyio.move_on_after(CLIENT_CALL_TIMEOUT_S):
        with contextlib.suppress(ToolError):
            await call


async def run_in_client_terminal(
    terminals: EditorTerminals,
    command: str,
    args: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    output_byte_limit: int,
    show: Callable[[list[DisplayBlock]], Awaitable[None]],
    limits: CommandLimits | None = None,
) -> tuple[str, CommandResult]:
    """Run in a client terminal; returns the terminal id and the result. Cancellation kills and releases it; so does
    reaching the process limit, where ``limits`` has a cgroup to watch."""
    try:
        with anyio.fail_after(CLIENT_CALL_TIMEOUT_S):
            terminal_id = await terminals.create(
                command, args, cwd=cwd, env=dict(env), output_byte_limit=output_byte_limit
            )
    except TimeoutError as exc:
        raise ToolError(f"the editor did not create a terminal within {CLIENT_CALL_TIMEOUT_S:g} s") from exc
    finished = False
    try:
        await show([TerminalBlock(terminal_id=terminal_id)])
        seen = _Seen()
        ended_by: list[str] = []
        with anyio.move_on_after(timeout_s) as deadline:
            async with anyio.create_task_group() as watchers:
                if limits is not None and limits.in_cgroup:
                    watchers.start_soon(watch_limits, limits, None, deadline, ended_by)
                await _watch(terminals, terminal_id, seen)
                watchers.cancel_scope.cancel()
        timed_out = deadline.cancelled_caught and not ended_by
        if deadline.cancelled_caught:
            await _bounded(terminals.kill(terminal_id))
        elif seen.error is not None:
            raise seen.error
        with anyio.move_on_after(CLIENT_CALL_TIMEOUT_S):
            try:
                seen.output, seen.truncated, status = await terminals.output(terminal_id)
                seen.exit = seen.exit or status
            except ToolError:
                pass
        finished = True
    finally:
        with anyio.CancelScope(shield=True):
            if not finished:
                await _bounded(terminals.kill(terminal_id))
            await _bounded(terminals.release(terminal_id))
    status = seen.exit
    return terminal_id, CommandResult(
        output=seen.output,
        truncated=seen.truncated,
        exit_code=status.exit_code if status is not None and not timed_out else None,
        signal=status.signal if status is not None and not timed_out else None,
        timed_out=timed_out,
        ended_by=ended_by[0] if ended_by else None,
    )
