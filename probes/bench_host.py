"""``make bench``'s session host rows: the front door's start-up with a warm host, attach and catch-up of a live
session, the cost of each extra attached connection per streamed chunk, and the host's memory with open sessions;
and the remote door's refusal of an oversized body (``remote_door_body``: the host's peak RSS and the time to the
413 while a client streams 200 MB at it with a valid token).

A host (``python -m hermes_acp host``) runs in the bench's home with a short private runtime directory; front
doors (``python -m hermes_acp --shared``) are spawned with the probe's client, as an editor would. Printed, never
asserted.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from acp import schema

from .agent import AgentProcess, ProbeClient, spawn_agent
from .http_upload import post_streaming
from .raw import raw_agent

__all__ = ["remote_door_body", "remote_front_door", "shared_host"]

REPO = Path(__file__).resolve().parent.parent
FRONT_DOOR = [sys.executable, "-m", "hermes_acp", "--shared"]


def _text(text: str) -> list[Any]:
    return [schema.TextContentBlock(type="text", text=text)]


@contextlib.asynccontextmanager
async def _host(env: dict[str, str], stderr: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    with stderr.open("ab") as err:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "hermes_acp", "host", stdout=asyncio.subprocess.PIPE, stderr=err, env=env
        )
    assert process.stdout is not None
    with anyio.fail_after(60):
        await process.stdout.readline()  # "hermes-acp host listening on …"
    try:
        yield process
    finally:
        with anyio.CancelScope(shield=True):
            process.terminate()
            with anyio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()


def _door(env: dict[str, str], stderr: Path, workspace: Path, client: ProbeClient | None = None) -> Any:
    return spawn_agent(FRONT_DOOR, env=env, stderr=stderr, client=client or ProbeClient(), cwd=workspace)


async def _new(agent: AgentProcess, workspace: Path) -> str:
    with anyio.fail_after(30):
        return (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id


def _rss_kib(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def _ms(values: list[float]) -> str:
    values = sorted(values)
    return f"{values[len(values) // 2]:.1f} ms (min {values[0]:.1f})" if values else "n/a"


async def shared_host(
    home: Path, workspace: Path, base_env: dict[str, str], stored: str, runs: int = 10
) -> list[dict[str, str]]:
    """The rows, as ``{"name", "value", "note"}``; ``stored`` is a session of about 2,000 events in the store."""
    runtime = Path(tempfile.mkdtemp(prefix="hacp-bench-", dir="/tmp"))
    env = {**base_env, "XDG_RUNTIME_DIR": str(runtime)}
    stderr = home / "host-bench.stderr"
    rows: list[dict[str, str]] = []
    try:
        async with _host(env, stderr) as host:
            initialize: list[float] = []
            first_new: list[float] = []
            for _ in range(runs):
                async with _door(env, stderr, workspace) as door:
                    initialize.append(door.initialize_ms or 0)
                    await _new(door, workspace)
                    first_new.append((time.perf_counter() - door.spawned_at) * 1000)
            rows.append(
                {
                    "name": "front door (warm host) → initialize response",
                    "value": _ms(initialize),
                    "note": f"median of {runs} spawns of `hermes-acp --shared` (goal ≤ 60 ms)",
                }
            )
            rows.append(
                {
                    "name": "front door (warm host) → first session/new answered",
                    "value": _ms(first_new),
                    "note": "goal ≤ 80 ms",
                }
            )
            rows.extend(await _catch_up(env, stderr, workspace, stored))
            rows.extend(await _fan_out(env, stderr, workspace))
            rows.append(await _memory(env, stderr, workspace, host.pid))
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    return rows


async def _catch_up(env: dict[str, str], stderr: Path, workspace: Path, session: str) -> list[dict[str, str]]:
    """The stored session of about 2,000 events, open in the host with a turn streaming; other front doors load it."""
    async with _door(env, stderr, workspace) as first:
        with anyio.fail_after(60):
            await first.conn.load_session(session_id=session, cwd=str(workspace), mcp_servers=[])
        timings: list[float] = []
        events = 0
        async with anyio.create_task_group() as group:
            first.client.reset_first_update()
            group.start_soon(_prompt_quietly, first, session, "cancel-me while they attach")
            with anyio.fail_after(30):
                await first.client.first_update.wait()
            for _ in range(5):
                client = ProbeClient()
                async with _door(env, stderr, workspace, client) as second:
                    started = time.perf_counter()
                    with anyio.fail_after(60):
                        await second.conn.load_session(session_id=session, cwd=str(workspace), mcp_servers=[])
                    timings.append((time.perf_counter() - started) * 1000)
                    events = len(client.updates)
            with anyio.fail_after(30):
                await first.conn.cancel(session_id=session)
            group.cancel_scope.cancel()
    return [
        {
            "name": "attach + catch-up of a live session (session/load, turn streaming)",
            "value": _ms(timings),
            "note": f"{events} updates replayed to the last frame before the answer (goal ≤ 300 ms for 2,000 events)",
        }
    ]


async def _prompt_quietly(agent: AgentProcess, session: str, text: str) -> None:
    with contextlib.suppress(Exception):
        await agent.conn.prompt(session_id=session, prompt=_text(text))


async def _fan_out(env: dict[str, str], stderr: Path, workspace: Path) -> list[dict[str, str]]:
    """One streamed response of 500 chunks, timed with 1 and with 4 connections attached."""
    per_chunk: dict[int, float] = {}
    async with contextlib.AsyncExitStack() as stack:
        first = await stack.enter_async_context(_door(env, stderr, workspace))
        session = await _new(first, workspace)
        watchers = 0
        for attached in (1, 4):
            while watchers + 1 < attached:
                watcher = await stack.enter_async_context(_door(env, stderr, workspace))
                with anyio.fail_after(60):
                    await watcher.conn.resume_session(session_id=session, cwd=str(workspace), mcp_servers=[])
                watchers += 1
            samples = []
            for _ in range(3):
                started = time.perf_counter()
                with anyio.fail_after(60):
                    await first.conn.prompt(session_id=session, prompt=_text("stream-rate please"))
                samples.append((time.perf_counter() - started) * 1000 / 500)
            per_chunk[attached] = sorted(samples)[1]
    extra = (per_chunk[4] - per_chunk[1]) / 3
    return [
        {
            "name": "each extra attached connection, per streamed chunk",
            "value": f"{extra:.3f} ms" if extra > 0 else f"{extra:.3f} ms (within noise)",
            "note": f"500 chunks at 1 ms: {per_chunk[1]:.3f} ms/chunk with 1 attached, {per_chunk[4]:.3f} with 4"
            " (goal ≤ 1 ms)",
        }
    ]


async def _memory(env: dict[str, str], stderr: Path, workspace: Path, pid: int) -> dict[str, str]:
    before = _rss_kib(pid)
    async with _door(env, stderr, workspace) as door:
        for _ in range(50):
            session = await _new(door, workspace)
            with anyio.fail_after(60):
                await door.conn.prompt(session_id=session, prompt=_text("hello"))
        after = _rss_kib(pid)
    return {
        "name": "host RSS with 50 open sessions (one turn each)",
        "value": f"{after / 1024:.0f} MiB",
        "note": f"{before / 1024:.0f} MiB before them; printed, no goal",
    }


BODY_MIB = 200


async def remote_door_body(root: Path, config: str, base_env: dict[str, str]) -> list[dict[str, str]]:
    """A host with a remote door; a client with the valid token streams a 200 MB ``POST /acp`` at it (chunked, from
    a generator: the client holds 1 MiB; it reads the answer while it sends, as ``fetch`` does). The host's peak RSS
    (VmHWM) before and after, what it still holds, and the time to the answer."""
    home = root / "door-home"
    home.mkdir(parents=True, exist_ok=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    (home / "config.toml").write_text(config + f'\n[host]\nlisten = ["ws://127.0.0.1:{port}"]\n')
    runtime = Path(tempfile.mkdtemp(prefix="hacp-bench-", dir="/tmp"))
    env = {**base_env, "HERMES_ACP_HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)}
    chunk = b" " * (1024 * 1024)
    try:
        async with _host(env, home / "host-bench.stderr") as host:
            token = (home / "host.token").read_text().strip()
            before = _rss_kib(host.pid, "VmHWM")
            started = time.perf_counter()
            status, _, sent = await post_streaming(port, token, itertools.repeat(chunk, BODY_MIB))
            elapsed = (time.perf_counter() - started) * 1000
            peak, held = _rss_kib(host.pid, "VmHWM"), _rss_kib(host.pid)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    return [
        {
            "name": f"remote door: a {BODY_MIB} MB POST with the token → host peak RSS",
            "value": f"{before / 1024:.0f} → {peak / 1024:.0f} MiB",
            "note": f"VmHWM before and after; {held / 1024:.0f} MiB resident after; answered {status}",
        },
        {
            "name": f"remote door: a {BODY_MIB} MB POST → its answer",
            "value": f"{elapsed:.0f} ms",
            "note": f"loopback, chunked from a generator, {sent / 1024 / 1024:.0f} MiB sent before the answer came",
        },
    ]


MISSED = 100
"""Events a rejoining client missed (``remote_front_door``)."""


async def remote_front_door(
    home: Path, workspace: Path, config: str, base_env: dict[str, str], stored: str, runs: int = 10
) -> list[dict[str, str]]:
    """A host with a remote door on loopback, warm: ``hermes-acp --connect`` spawned → ``initialize`` answered,
    beside ``hermes-acp --shared`` (the local front door) spawned in turn with it; then ``session/load`` of a stored
    session of about 2,000 events, whole and rejoined after the cursor ``MISSED`` events before its end (each on a
    fresh local front door, the session open in the host)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    (home / "config.toml").write_text(config + f'\n[host]\nlisten = ["ws://127.0.0.1:{port}"]\n')
    runtime = Path(tempfile.mkdtemp(prefix="hacp-bench-", dir="/tmp"))
    env = {**base_env, "HERMES_ACP_HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)}
    stderr = home / "host-bench.stderr"
    connect = [
        *FRONT_DOOR[:-1],
        "--connect",
        f"ws://127.0.0.1:{port}/acp",
        "--token-file",
        str(home / "host.token"),
    ]
    local: list[float] = []
    remote: list[float] = []
    try:
        async with _host(env, stderr):
            for _ in range(runs + 1):  # the first of each warms the host and the page cache: left out
                for command, times in ((FRONT_DOOR, local), (connect, remote)):
                    async with spawn_agent(command, env=env, stderr=stderr, client=ProbeClient(), cwd=workspace) as a:
                        times.append(a.initialize_ms or 0)
            loads = await _loads(env, workspace, stored, runs)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    local, remote = local[1:], remote[1:]
    gap = sorted(there - here for there, here in zip(remote, local, strict=True))[len(remote) // 2]
    return [
        {
            "name": "--connect (warm host, loopback door) → initialize response",
            "value": _ms(remote),
            "note": f"median of {runs} spawns of `hermes-acp --connect ws://…/acp`; {gap:+.1f} ms against the local"
            f" front door's {_ms(local)} in the same runs (goal: within 20 ms)",
        },
        *loads,
    ]


async def _loads(env: dict[str, str], workspace: Path, session_id: str, runs: int) -> list[dict[str, str]]:
    load = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
    async with raw_agent(FRONT_DOOR, env=env, cwd=workspace, keep_updates=True) as agent:
        await agent.ask("initialize", {"protocolVersion": 1})
        await agent.ask("session/load", load)  # opens it in the host; the cursors of every event
    seqs = sorted({(int(a.cursor.split(".")[1]), a.cursor) for a in agent.updates if a.cursor})
    last = seqs[-1][0]
    cursor = max((item for item in seqs if item[0] <= last - MISSED), default=seqs[0])[1]
    rows = []
    for name, params in (
        ("whole session/load", load),
        (f"rejoin by cursor, {MISSED} events missed", {**load, "_meta": {"hermes": {"afterCursor": cursor}}}),
    ):
        times, updates = [], 0
        for _ in range(runs):
            async with raw_agent(FRONT_DOOR, env=env, cwd=workspace) as agent:
                await agent.ask("initialize", {"protocolVersion": 1})
                elapsed, updates, _ = await agent.ask("session/load", params)
                times.append(elapsed)
        rows.append(
            {
                "name": f"session/load of {last:,} stored events (open in the host): {name}",
                "value": _ms(times),
                "note": f"{updates} updates; request to answer over a local front door, median of {runs}",
            }
        )
    return rows
