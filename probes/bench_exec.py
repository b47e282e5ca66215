"""``make bench``'s ``exec`` rows: how fast ``hermes-acp exec`` starts, beside the inline server's first turn.

Each run spawns the real ``python -m hermes_acp`` against the bench's scripted model server (0 ms model, a two-word
answer) in the bench's home:

- ``exec --json``: from the spawn to the first ``agent_message_chunk`` line on its stdout (the first chunk of the
  answer, as a script reading the NDJSON sees it);
- ``exec``: from the spawn to the process's exit with a one-line answer (what a CI step waits for);
- the inline server, as an editor drives it: spawn → ``initialize`` → ``session/new`` → ``session/prompt`` → the
  first chunk (the same measure as ``cold_start``'s last row, taken here so that the rows sit side by side).

Printed, never asserted. The goal (issue 31): ≤ 600 ms to the first chunk on this machine's quiet runs.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import anyio
from acp import schema

__all__ = ["exec_rows"]

RUNS = 7
PROMPT = "Say hi for the exec bench"


class _Bench(Protocol):
    home: Path
    workspace: Path

    def env(self) -> dict[str, str]: ...

    def spawn(self) -> Any: ...


async def exec_rows(bench: _Bench, row: Callable[..., Any], command: list[str]) -> list[Any]:
    first_chunk: list[float] = []
    to_exit: list[float] = []
    inline: list[float] = []
    env = {**bench.env(), "PATH": "/usr/bin:/bin"}
    for _ in range(RUNS):
        first_chunk.append(await _exec_first_chunk(command, env, bench.workspace))
        to_exit.append(await _exec_exit(command, env, bench.workspace))
        inline.append(await _inline_first_chunk(bench))
    return [
        row("exec --json: spawn → first chunk of the answer", _ms(first_chunk), f"median of {RUNS}; goal ≤ 600 ms"),
        row("exec: spawn → exit, one-line answer", _ms(to_exit), "the answer printed, the server closed"),
        row("inline server: spawn → first chunk of the first prompt", _ms(inline), "initialize, new, prompt (SDK)"),
    ]


async def _exec_first_chunk(command: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    process = await anyio.open_process([*command, "exec", "--json", PROMPT], env=env, cwd=cwd, stdin=None)
    found: float | None = None
    async with process:
        assert process.stdout is not None
        buffered = b""
        with anyio.fail_after(60):
            async for data in process.stdout:
                buffered += data
                if found is None and b'"agent_message_chunk"' in buffered:
                    found = (time.perf_counter() - started) * 1000
            await process.wait()
    if found is None:
        raise RuntimeError("exec --json wrote no agent_message_chunk")
    return found


async def _exec_exit(command: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    with anyio.fail_after(60):
        done = await anyio.run_process([*command, "exec", PROMPT], env=env, cwd=cwd, check=False)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"exec exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


async def _inline_first_chunk(bench: _Bench) -> float:
    async with bench.spawn() as agent:
        with anyio.fail_after(30):
            session = await agent.conn.new_session(cwd=str(bench.workspace), mcp_servers=[])
        agent.client.reset_first_update()
        async with anyio.create_task_group() as group:
            group.start_soon(_prompt, agent, session.session_id)
            with anyio.fail_after(30):
                await agent.client.first_update.wait()
            elapsed: float = (time.perf_counter() - agent.spawned_at) * 1000
    return elapsed


async def _prompt(agent: Any, session_id: str) -> None:
    with anyio.fail_after(60):
        await agent.conn.prompt(session_id=session_id, prompt=[schema.TextContentBlock(type="text", text=PROMPT)])


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ms (min {min(values):.1f})"
