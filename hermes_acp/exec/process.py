"""Running one shell command on this machine: output captured as it comes (head and tail kept, the middle dropped
past a cap), streamed to a callback at most every ``interval`` seconds, a time limit, its process limit watched (a
command that reaches it is ended at once, ``CommandResult.ended_by`` says why), a stop the caller may set at any time
(``CommandResult.stopped``), and a process group that is always gone when the call returns, whether the command
exited, timed out, was ended or stopped, or the caller was cancelled.

The command starts as a process tree (``platform.processes``: its own process group on POSIX, psutil's tree on
Windows); ending the call signals the whole tree (SIGTERM, then SIGKILL after a grace) and waits, bounded, until no
member is left alive. Background jobs a command leaves behind are ended too: every process belongs to the call that
started it. Nothing here knows tools, approvals or the editor.
"""

from __future__ import annotations

import subprocess
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import ByteReceiveStream, Process

from hermes_acp.core.flags import Flag
from hermes_acp.platform import processes
from hermes_acp.platform.signals import signal_name

if TYPE_CHECKING:
    from .limits import CommandLimits

__all__ = [
    "CommandResult",
    "OutputBuffer",
    "group_alive",
    "members_alive",
    "run_command",
    "signal_name",
    "watch_limits",
]

_TERM_GRACE_S = 1.0
_KILL_WAIT_S = 3.0
_EOF_GRACE_S = 1.0
_POLL_S = 0.02
_FIRST_POLL_S = 0.001
LIMIT_POLL_S = 0.25
"""How often a command's cgroup is asked whether it reached its process limit."""
LIMIT_COUNT_S = 0.5
"""How often the tasks of a sandbox without a cgroup are counted (a scan of ``/proc``)."""
TREE_REFRESH_S = 0.1
"""How often a tree found through parent ids (psutil's) is looked at while its command runs."""


@dataclass
class OutputBuffer:
    """Output bytes with the first ``head_limit`` and the last ``tail_limit`` kept; the middle is only counted."""

    head_limit: int
    tail_limit: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    @property
    def dropped(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if self.dropped <= 0:
            return (self.head + self.tail).decode("utf-8", errors="replace")
        return f"{head}\n[... {self.dropped} bytes of output omitted ...]\n{tail}"

    def since(self, mark: int) -> tuple[bytes, int]:
        """What was added after the first ``mark`` bytes, for a stream of the output: ``(bytes still kept, bytes
        dropped before them)``. Dropped bytes are the middle this buffer no longer holds."""
        added = self.total - mark
        if added <= 0:
            return b"", 0
        from_head = bytes(self.head[mark:]) if mark < len(self.head) else b""
        after_head = added - len(from_head)
        kept = min(after_head, len(self.tail))
        return from_head + bytes(self.tail[len(self.tail) - kept :]), after_head - kept

    def last(self, max_bytes: int) -> str:
        """The end of the output, for a live view."""
        data = bytes(self.head + self.tail) if self.dropped <= 0 else bytes(self.tail)
        if len(data) > max_bytes:
            data = data[-max_bytes:]
            newline = data.find(b"\n")
            if 0 <= newline < 200:
                data = data[newline + 1 :]
        return data.decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class CommandResult:
    output: str
    truncated: bool
    exit_code: int | None
    signal: str | None
    timed_out: bool
    ended_by: str | None = None
    """Why the runner ended the command before it finished (it reached its process limit), if it did."""
    stopped: bool = False
    """The caller's ``stop`` ended it before it finished (a client stopped the command on its own)."""


def members_alive(tree: processes.ProcessTree) -> bool:
    """Whether a member of the tree is alive (blocking: a look at ``/proc`` or psutil)."""
    return tree.alive()


def group_alive(pgid: int) -> bool:
    """True while a process of the group (a child started with ``processes.spawn_options``) is alive; zombies do not
    count. Blocking when the group still exists."""
    tree = processes.tree_of(pgid)
    return tree.exists() and members_alive(tree)


async def _tree_alive(tree: processes.ProcessTree, scan: Callable[[processes.ProcessTree], bool]) -> bool:
    """``group_alive`` without blocking the event loop: the look runs in a worker thread, and only when the tree
    still exists at all (one syscall for a process group)."""
    return tree.exists() and await anyio.to_thread.run_sync(scan, tree)


async def _until_gone(
    tree: processes.ProcessTree, process: Process, scan: Callable[[processes.ProcessTree], bool]
) -> None:
    if process.returncode is None:
        await process.wait()
    # Members that are not our children cannot be waited for, and there is no event: the tree is polled, soon at
    # first (members that are already being ended are gone within a millisecond or two), then every ``_POLL_S``.
    pause = _FIRST_POLL_S
    while await _tree_alive(tree, scan):
        await anyio.sleep(pause)
        pause = min(pause * 2, _POLL_S)


async def _end_tree(
    tree: processes.ProcessTree, process: Process, scan: Callable[[processes.ProcessTree], bool]
) -> None:
    """Make sure no process of the command's tree is left (shielded, bounded).

    This holds for a sandboxed command too: bwrap reports its command's exit and exits while the kernel may still
    be ending the rest of its PID namespace, so its exit alone does not mean the group is gone. When it is (the
    usual case), the check is one syscall."""
    with anyio.CancelScope(shield=True):
        if process.returncode is not None and not await _tree_alive(tree, scan):
            return
        tree.terminate()
        with anyio.move_on_after(_TERM_GRACE_S):
            await _until_gone(tree, process, scan)
            return
        tree.kill()
        with anyio.move_on_after(_KILL_WAIT_S):
            await _until_gone(tree, process, scan)


async def _remember(tree: processes.ProcessTree) -> None:
    """Until cancelled: let a tree found through parent ids see the descendants there are now."""
    while True:
        await anyio.to_thread.run_sync(tree.refresh)
        await anyio.sleep(TREE_REFRESH_S)


async def _pump(stream: ByteReceiveStream, buffer: OutputBuffer, changed: Flag, eof: anyio.Event) -> None:
    try:
        async for chunk in stream:
            buffer.add(chunk)
            changed.set()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
    finally:
        eof.set()


async def _publish(changed: Flag, show: Callable[[], Awaitable[None]], interval: float) -> None:
    while True:
        await changed.wait()
        await show()
        await anyio.sleep(interval)


async def watch_limits(
    limits: CommandLimits, sandbox_pid: int | None, scope: anyio.CancelScope, why: list[str]
) -> None:
    """Until cancelled: when the command reaches its process limit, say why in ``why`` and cancel ``scope`` (the
    wait for it). ``sandbox_pid``: the local bwrap's pid, for counting where there is no cgroup."""
    if limits.limits.processes == 0 and not limits.counts_group:
        return
    interval = LIMIT_POLL_S if limits.in_cgroup else LIMIT_COUNT_S
    while True:
        await anyio.sleep(interval)
        reason = await anyio.to_thread.run_sync(limits.exceeded, sandbox_pid)
        if reason is not None:
            why.append(reason)
            scope.cancel()
            return


async def _stop_on(stop: anyio.Event, scope: anyio.CancelScope) -> None:
    """Until cancelled: once ``stop`` is set, cancel ``scope`` (the wait for the command)."""
    await stop.wait()
    scope.cancel()


async def run_command(
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    buffer: OutputBuffer,
    on_output: Callable[[OutputBuffer], Awaitable[None]],
    interval: float = 0.1,
    own_pid_namespace: bool = False,
    limits: CommandLimits | None = None,
    scan_group: Callable[[processes.ProcessTree], bool] = members_alive,
    stop: anyio.Event | None = None,
) -> CommandResult:
    """Run ``argv`` to its end, to ``timeout_s`` or until ``stop`` is set (its tree is ended as at the time
    limit); output accumulates in ``buffer`` and goes to ``on_output``. ``scan_group``: the blocking check for a
    live member of the command's tree (``members_alive``), run in a worker thread, and only while the tree still
    exists."""
    process = await anyio.open_process(
        argv,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        **processes.spawn_options(),
    )
    tree = processes.tree_of(process.pid)
    timed_out = False
    ended_by: list[str] = []
    ended_by_stop = False
    try:
        changed = Flag()
        eof = anyio.Event()
        async with anyio.create_task_group() as tg:
            assert process.stdout is not None
            tg.start_soon(_pump, process.stdout, buffer, changed, eof)
            tg.start_soon(_publish, changed, lambda: on_output(buffer), interval)
            if tree.needs_refresh:
                tg.start_soon(_remember, tree)
            with anyio.move_on_after(timeout_s) as deadline:
                if limits is not None:
                    pid = process.pid if own_pid_namespace or limits.counts_group else None
                    tg.start_soon(watch_limits, limits, pid, deadline, ended_by)
                if stop is not None:
                    tg.start_soon(_stop_on, stop, deadline)
                await process.wait()
            if deadline.cancelled_caught:
                limited, stopped = bool(ended_by), stop is not None and stop.is_set()
                await _end_tree(tree, process, scan_group)
                # Ended by us unless it finished on its own in the same instant (a clean exit, which a signal never
                # gives): then its exit is what it reports, not the time limit or the stop.
                ours = process.returncode != 0 and not limited
                timed_out = ours and not stopped
                ended_by_stop = ours and stopped
            # Output still in the pipe; a background job holding it open does not keep us waiting.
            with anyio.move_on_after(_EOF_GRACE_S):
                await eof.wait()
            tg.cancel_scope.cancel()
    finally:
        await _end_tree(tree, process, scan_group)
        with anyio.CancelScope(shield=True), anyio.move_on_after(_KILL_WAIT_S):
            await process.aclose()
    code = process.returncode
    return CommandResult(
        output=buffer.text(),
        truncated=buffer.dropped > 0,
        exit_code=code if code is not None and code >= 0 else None,
        signal=signal_name(-code) if code is not None and code < 0 else None,
        timed_out=timed_out,
        ended_by=ended_by[0] if ended_by else None,
        stopped=ended_by_stop,
    )
