"""Spawn any ACP agent command and talk to it with the acp SDK's client side, recording everything.

``AgentProcess`` starts the command with an explicit environment (only PATH plus what the caller passes), sends the
agent's stderr to a file or inherits it (never an undrained pipe), samples the agent's peak RSS, and exposes an
initialized ``ClientSideConnection``. ``ProbeClient`` records every ``session/update`` with its arrival time and
answers permission requests by a fixed policy. It knows nothing about which checks run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import struct
import time
import zlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import acp
import anyio
from acp import schema
from acp.client.connection import ClientSideConnection

from .bare_client import BareClient

__all__ = ["AgentProcess", "ProbeClient", "Update", "peak_rss_kib", "solid_png", "spawn_agent", "stop_agent"]

PermissionPolicy = Literal["allow", "deny", "cancel"]
_TURN_OUTPUT = frozenset({"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"})


@dataclass
class Update:
    at: float
    session_id: str
    body: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.body.get("sessionUpdate"))


@dataclass
class ProbeClient(BareClient):
    """A client that records updates and answers permission questions; it offers no fs or terminal."""

    permissions: PermissionPolicy = "allow"
    updates: list[Update] = field(default_factory=list)
    permission_requests: list[dict[str, Any]] = field(default_factory=list)
    first_update: anyio.Event = field(default_factory=anyio.Event)
    """Set by the first output of a turn (text, thought, tool call, plan); reset before each prompt."""
    incoming_frames: int = 0
    raw_initialize: dict[str, Any] | None = None
    sent_requests: dict[Any, tuple[float, str]] = field(default_factory=dict)
    """id → (when, method) of every request the client sent (the SDK's own ids)."""
    answered: dict[Any, float] = field(default_factory=dict)
    """id → when the answer to that request of ours arrived (also for requests the SDK abandoned)."""
    frame_arrived: anyio.Event = field(default_factory=anyio.Event)
    """Set by the next incoming frame (then replaced by a fresh event)."""
    """The ``initialize`` result exactly as it came over the wire (the SDK's models would hide booleans)."""

    def observe(self, event: Any) -> None:
        """Stream observer of the SDK connection: counts frames, times requests and their answers, and keeps the
        raw initialize answer."""
        message = event.message
        if getattr(event.direction, "value", "") != "incoming":
            if "method" in message and "id" in message:
                self.sent_requests[message["id"]] = (time.perf_counter(), message["method"])
            return
        if "method" not in message and message.get("id") in self.sent_requests:
            self.answered[message["id"]] = time.perf_counter()
        self.frame_arrived.set()
        self.frame_arrived = anyio.Event()
        self.incoming_frames += 1
        result = event.message.get("result")
        if self.raw_initialize is None and isinstance(result, dict) and "protocolVersion" in result:
            self.raw_initialize = result

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        body = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.updates.append(Update(time.perf_counter(), session_id, body))
        if body.get("sessionUpdate") in _TURN_OUTPUT:
            self.first_update.set()

    async def request_permission(
        self, session_id: str, tool_call: schema.ToolCallUpdate, options: list[schema.PermissionOption], **kwargs: Any
    ) -> schema.RequestPermissionResponse:
        self.permission_requests.append(tool_call.model_dump(mode="json", by_alias=True, exclude_none=True))
        wanted = {"allow": ("allow_once", "allow_always"), "deny": ("reject_once", "reject_always")}.get(
            self.permissions, ()
        )
        for option in options:
            if option.kind in wanted:
                return schema.RequestPermissionResponse(
                    outcome=schema.AllowedOutcome(outcome="selected", option_id=option.option_id)
                )
        return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))

    def reset_first_update(self) -> None:
        self.first_update = anyio.Event()

    def of(self, session_id: str, *kinds: str) -> list[Update]:
        return [u for u in self.updates if u.session_id == session_id and (not kinds or u.kind in kinds)]


@dataclass
class AgentProcess:
    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    client: ProbeClient
    spawned_at: float
    initialize: schema.InitializeResponse | None = None
    initialize_ms: float | None = None
    peak_rss_kib: int = 0

    def sample_rss(self) -> None:
        self.peak_rss_kib = max(self.peak_rss_kib, peak_rss_kib(self.process.pid))

    async def kill(self) -> None:
        self.sample_rss()
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
        with anyio.fail_after(10):
            await self.process.wait()


def peak_rss_kib(pid: int) -> int:
    """VmHWM (peak resident set) of a live process, in KiB; 0 when it cannot be read."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _environment(passthrough: Mapping[str, str]) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **passthrough}


@contextlib.asynccontextmanager
async def spawn_agent(
    command: Sequence[str],
    *,
    env: Mapping[str, str],
    stderr: Path | None,
    client: ProbeClient,
    cwd: Path | None = None,
    initialize: bool = True,
    timeout_s: float = 60.0,
) -> AsyncIterator[AgentProcess]:
    """Start ``command`` and (by default) initialize it. ``stderr`` None means inherit ours."""
    started = time.perf_counter()
    with contextlib.ExitStack() as files:
        err = files.enter_context(stderr.open("ab")) if stderr is not None else None
        process = await asyncio.create_subprocess_exec(
            command[0],
            *command[1:],
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=err,
            env=_environment(env),
            cwd=str(cwd) if cwd else None,
            limit=50 * 1024 * 1024,
        )
    assert process.stdin is not None
    assert process.stdout is not None
    conn = acp.connect_to_agent(
        client, process.stdin, process.stdout, use_unstable_protocol=True, observers=[client.observe]
    )
    agent = AgentProcess(conn=conn, process=process, client=client, spawned_at=started)
    try:
        if initialize:
            with anyio.fail_after(timeout_s):
                agent.initialize = await conn.initialize(
                    protocol_version=1,
                    client_capabilities=schema.ClientCapabilities(),
                    client_info=schema.Implementation(name="hermes-acp-probe", version="1"),
                )
            agent.initialize_ms = (time.perf_counter() - started) * 1000
        yield agent
    finally:
        agent.sample_rss()
        # An agent that was killed (or died) leaves a broken pipe: closing may fail to flush it.
        with contextlib.suppress(ConnectionError):
            await conn.close()
        await stop_agent(process, grace_s=5)


async def stop_agent(process: asyncio.subprocess.Process, grace_s: float) -> None:
    """Close the agent's stdin (the editor went away), give it ``grace_s`` to exit on its own, then kill it.

    Shielded, so it also runs in a cancelled scope, and bounded."""
    with anyio.CancelScope(shield=True):
        if process.stdin is not None and not process.stdin.is_closing():
            process.stdin.close()
        with anyio.move_on_after(grace_s):
            await process.wait()
        if process.returncode is None:
            process.kill()
        with anyio.fail_after(10):
            await process.wait()


def solid_png(width: int = 32, height: int = 32, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A solid-colour PNG written with zlib (the probe needs no Pillow)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )
