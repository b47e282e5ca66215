"""A real session host for tests: ``python -m hermes_acp host`` and front doors (``python -m hermes_acp --shared``)
against the scripted model server, in a temp home with a short private runtime directory.

``shared_home(tmp_path, scenario)`` starts the model server, writes ``config.toml`` (provider ``fx``, model
``fx:m``, plus ``config_extra``) and yields a ``SharedHome``: ``start_host()`` spawns the host and waits for the
line it prints once it listens; ``front_door()`` spawns a front door and connects the acp SDK's client to it
(``FrontDoor``: the connection, the recording client, the process, ``kill()`` for an editor or SSH link that
drops); ``status()`` is ``hermes-acp host status``. On the way out every front door is killed and the host is
stopped (``host stop``, then SIGKILL of the pid in ``host.json`` if it is still there). Every frame a front door
saw is checked against the ACP schema.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
import anyio
from acp.client.connection import ClientSideConnection

from fixtures.model_server import ModelServer, serve_model_server
from hermes_acp.transports.paths import host_paths

from .acp_client import RecordingClient, text_block
from .acp_schema import FrameLog, hidden_from_the_sdk, read_frame
from .agent_process import FRAME_LIMIT, REPO, START_TIMEOUT_S, TURN_TIMEOUT_S, RawAnswers, portable_env
from .sandbox_pin import pin_sandbox

__all__ = ["FrontDoor", "SharedHome", "shared_home"]


@dataclass
class FrontDoor:
    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    client: RecordingClient
    raw: RawAnswers
    frames: FrameLog
    stdout_lines: list[bytes] = field(default_factory=list)

    async def initialize(self, **capabilities: Any) -> Any:
        with anyio.fail_after(START_TIMEOUT_S):
            return await self.conn.initialize(
                protocol_version=1, client_capabilities=acp.schema.ClientCapabilities.model_validate(capabilities)
            )

    async def prompt(self, session_id: str, text: str, *, timeout: float = TURN_TIMEOUT_S) -> Any:
        with anyio.fail_after(timeout):
            return await self.conn.prompt(session_id=session_id, prompt=[text_block(text)])

    async def request(self, method: str, params: dict[str, Any], *, timeout: float = START_TIMEOUT_S) -> Any:
        """A raw JSON-RPC request; its whole answer (``result`` or ``error``)."""
        request_id = f"raw-{len(self.raw.answers)}-{method}"
        assert self.process.stdin is not None
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.frames.add("to_agent", frame)
        self.process.stdin.write(json.dumps(frame).encode() + b"\n")
        with anyio.fail_after(timeout):
            await self.process.stdin.drain()
            while request_id not in self.raw.answers:
                await self.raw.arrived.wait()
        return self.raw.answers[request_id]

    def kill(self) -> None:
        """SIGKILL: the editor crashed, or the SSH link to it dropped."""
        if self.process.returncode is None:
            self.process.kill()


@dataclass
class SharedHome:
    home: Path
    workspace: Path
    env: dict[str, str]
    model: ModelServer
    host: asyncio.subprocess.Process | None = None
    doors: list[FrontDoor] = field(default_factory=list)

    @property
    def runtime(self) -> Path:
        return Path(self.env["XDG_RUNTIME_DIR"])

    def record(self) -> dict[str, Any] | None:
        """``host.json`` of the running host, if any."""
        path = Path(host_paths(self.env).record)
        return json.loads(path.read_text()) if path.exists() else None

    async def start_host(self, *, env: Mapping[str, str] | None = None) -> asyncio.subprocess.Process:
        """``hermes-acp host`` as a child of the test; returns once it listens."""
        stderr = (self.home / "host-test-stderr.log").open("ab")
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "hermes_acp",
            "host",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env={**self.env, **(env or {})},
            cwd=str(self.workspace),
        )
        stderr.close()
        assert process.stdout is not None
        with anyio.fail_after(START_TIMEOUT_S):
            line = await process.stdout.readline()
        assert line.startswith(b"hermes-acp host listening"), (line, self.host_log())
        self.host = process
        return process

    def host_log(self) -> str:
        parts = []
        for path in (self.home / "host-test-stderr.log", self.home / "logs" / "host-stderr.log"):
            if path.exists():
                parts.append(path.read_text(errors="replace"))
        return "\n".join(parts)

    async def status(self) -> tuple[int, dict[str, Any] | None]:
        """``hermes-acp host status``: its exit status and the JSON it printed (None when none runs)."""
        done = await self.command("host", "status")
        text = done.stdout.decode()
        return done.returncode, (json.loads(text) if text.lstrip().startswith("{") else None)

    async def command(self, *args: str, env: Mapping[str, str] | None = None) -> Any:
        with anyio.fail_after(START_TIMEOUT_S):
            return await anyio.run_process(
                [sys.executable, "-m", "hermes_acp", *args], env={**self.env, **(env or {})}, check=False
            )

    @contextlib.asynccontextmanager
    async def front_door(
        self,
        client: RecordingClient | None = None,
        *,
        env: Mapping[str, str] | None = None,
        initialize: bool = True,
        args: tuple[str, ...] = ("--shared",),
    ) -> AsyncIterator[FrontDoor]:
        """A front door (``--shared``; ``args``: another, e.g. ``--connect URL``) with the acp SDK's client on its
        stdio."""
        stderr = (self.home / "front-door-stderr.log").open("ab")
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "hermes_acp",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env={**self.env, **(env or {})},
            cwd=str(self.workspace),
            limit=FRAME_LIMIT,
        )
        stderr.close()
        assert process.stdout is not None
        assert process.stdin is not None
        tee = asyncio.StreamReader(limit=FRAME_LIMIT)
        recording = client or RecordingClient()
        frames = FrameLog()
        raw = RawAnswers()
        conn = acp.connect_to_agent(
            recording, process.stdin, tee, use_unstable_protocol=True, observers=[frames.observe_sent, raw.observe]
        )
        door = FrontDoor(conn, process, recording, raw, frames)
        self.doors.append(door)

        async def copy_stdout() -> None:
            assert process.stdout is not None
            while line := await process.stdout.readline():
                door.stdout_lines.append(line)
                message = read_frame(line)
                frames.add("to_client", message)  # in the order sent, whatever the SDK's client makes of it
                if not hidden_from_the_sdk(message):
                    tee.feed_data(line)
            tee.feed_eof()

        async with anyio.create_task_group() as group:
            group.start_soon(copy_stdout)
            try:
                if initialize:
                    await door.initialize()
                yield door
            finally:
                with anyio.CancelScope(shield=True):
                    door.kill()
                    with anyio.fail_after(10):
                        await process.wait()
                    with contextlib.suppress(ConnectionError, OSError):
                        await conn.close()
        frames.check()

    async def stop_host(self) -> None:
        """``host stop``, then SIGKILL of whatever host is left (shielded, bounded)."""
        with anyio.CancelScope(shield=True):
            record = self.record()
            await self.command("host", "stop")
            if self.host is not None:
                with anyio.move_on_after(10):
                    await self.host.wait()
                if self.host.returncode is None:
                    self.host.kill()
                    await self.host.wait()
            if record is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(record["pid"]), signal.SIGKILL)


def _config(base_url: str) -> str:
    return f'[model]\ndefault = "fx:m"\n\n[providers.fx]\nkind = "openai"\nbase_url = "{base_url}"\nmodels = ["m"]\n'


@contextlib.asynccontextmanager
async def shared_home(
    tmp_path: Path, scenario: dict[str, Any] | None = None, *, config_extra: str = ""
) -> AsyncIterator[SharedHome]:
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    scenario = scenario or {"name": "default", "responses": [{"steps": [{"text": "Hello."}], "repeat": True}]}
    runtime = Path(tempfile.mkdtemp(prefix="hacp-", dir="/tmp"))  # short: a socket path holds 107 bytes
    try:
        async with serve_model_server(scenario) as model:
            (home / "config.toml").write_text(pin_sandbox(_config(model.openai_base_url) + config_extra))
            env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": str(tmp_path),
                "HERMES_ACP_HOME": str(home),
                "XDG_RUNTIME_DIR": str(runtime),
                "PYTHONPATH": str(REPO),
                **portable_env(),
            }
            shared = SharedHome(home, workspace, env, model)
            try:
                yield shared
            finally:
                await shared.stop_host()
    finally:
        with contextlib.suppress(OSError):
            for path in sorted(runtime.rglob("*"), reverse=True):
                path.rmdir() if path.is_dir() else path.unlink()
            runtime.rmdir()
