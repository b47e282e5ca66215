"""Run one command contained on this machine, streaming its output: the one path from "run this" to a result.

``run_contained`` lays the command out in the sandbox (``Sandbox.contained``: the view, the environment, the
limits), runs it as one process group (``process.run_command``: output streamed to ``on_output``, the time limit,
the process limit watched), removes what its limits made, and returns the result with the notes the model gets
when the sandbox or a limit stopped something (``explain``). The terminal tool uses it for local commands; the
editor's terminals take the same line from ``Sandbox.contained`` and run it there. Knows nothing about tools,
approvals or ACP.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from hermes_acp.core import ModeId

from .explain import explain
from .process import CommandResult, OutputBuffer, run_command
from .sandbox import Sandbox

__all__ = ["Contained", "run_contained"]


@dataclass(frozen=True, slots=True)
class Contained:
    """How a contained command ended: its result, whether it ran in the sandbox, and the notes for the model."""

    result: CommandResult
    sandboxed: bool
    notes: list[str]


async def run_contained(
    sandbox: Sandbox,
    argv: Sequence[str],
    *,
    command: str,
    roots: Sequence[Path],
    cwd: Path,
    mode: ModeId,
    extra_env: Mapping[str, str],
    timeout_s: float,
    buffer: OutputBuffer,
    on_output: Callable[[OutputBuffer], Awaitable[None]],
    interval: float = 0.1,
    stop: anyio.Event | None = None,
) -> Contained:
    """Run ``argv`` (``command`` is how the model wrote it, for the notes) to its end, its time limit, its process
    limit or ``stop``; ``on_output`` is called at most every ``interval`` seconds. Raises ``OSError`` when it cannot be
    started (its program is not there: the wrappers in front of it would otherwise start and report it as a failed
    command)."""
    if not os.access(argv[0], os.X_OK):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])
    async with sandbox.contained(argv, roots=roots, cwd=cwd, mode=mode, extra_env=extra_env) as confined:
        result = await run_command(
            confined.argv,
            cwd=cwd,
            env=confined.env,
            timeout_s=timeout_s,
            buffer=buffer,
            on_output=on_output,
            interval=interval,
            own_pid_namespace=confined.sandboxed,
            limits=confined.limits,
            stop=stop,
        )
        home = sandbox.environment().get("HOME")
        notes = explain(confined, command, result, cwd=str(cwd), limits=sandbox.limits, home=home)
    return Contained(result, confined.sandboxed, [*notes, *confined.aftermath])
