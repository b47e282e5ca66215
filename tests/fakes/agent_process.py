"""The real agent for tests: ``python -m hermes_acp`` spawned with a temp home and the scripted model server.

``spawn_agent(tmp_path, scenario)`` starts the fixture model server (``fixtures.model_server``) in this process,
writes ``config.toml`` in a fresh ``HERMES_ACP_HOME`` with one OpenAI-compatible provider ``fx`` pointing at it
(models ``fx:m`` and ``fx:m2``, default ``fx:m``), spawns the agent (with the test run's ``HERMES_ACP_PORTABLE``,
``portable_env``) with stderr to a file and stdout teed (every line kept, to check it is JSON-RPC only, and every
frame logged as sent), and connects the acp SDK's client to it;
the child-session updates that client does not know (``subagent_update``, ``session_message``) are logged but not
handed to it. On the way out the agent's stdin is closed and it is given ``EXIT_TIMEOUT_S`` to exit on its own
(closing its sessions and their MCP servers), then killed. ``AgentProcess`` has small helpers for what tests do
most: sessions, prompts, the model requests the server recorded and the tools each one offered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
import anyio
from acp.client.connection import ClientSideConnection

from fixtures.model_server import ModelServer, RequestRecord, serve_model_server
from hermes_acp.platform._forced import PORTABLE_ENV
from probes.agent import stop_agent

from .acp_client import RecordingClient, text_block
from .acp_schema import FrameLog, hidden_from_the_sdk, read_frame
from .sandbox_pin import DEFAULT_TEST_SANDBOX, SandboxMode, pin_sandbox

__all__ = ["EXIT_TIMEOUT_S", "MODEL", "MODEL_2", "REPO", "AgentProcess", "portable_env", "spawn_agent"]

REPO = Path(__file__).resolve().parent.parent.parent
MODEL = "fx:m"
MODEL_2 = "fx:m2"
EXIT_TIMEOUT_S = 20.0
START_TIMEOUT_S = 30.0
"""Bounds initialize, session/new and raw requests: the first ones in a fresh process wait for its imports."""
TURN_TIMEOUT_S = 60.0
"""Bounds a prompt: the first model request may wait for MCP servers or the simulated driver to start."""
FRAME_LIMIT = 50 * 1024 * 1024
"""The longest stdout line (one JSON-RPC frame) read from the agent: screenshots and replays exceed asyncio's
default 64 KiB."""


@dataclass
class RawAnswers:
    """An observer of the SDK connection that picks up the answers to ``AgentProcess.request``'s raw frames."""

    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    arrived: anyio.Event = field(default_factory=anyio.Event)

    def observe(self, event: Any) -> None:
        message = event.message
        if getattr(event.direction, "value", "") == "incoming" and str(message.get("id", "")).startswith("raw-"):
            self.answers[message["id"]] = message
            self.arrived.set()
            self.arrived = anyio.Event()


@dataclass
class AgentProcess:
    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    client: RecordingClient
    model: ModelServer
    home: Path
    workspace: Path
    stderr_path: Path
    raw: RawAnswers
    frames: FrameLog = field(default_factory=FrameLog)
    """Every frame both ways, as sent (also those the SDK's client cannot read, e.g. unstable updates)."""
    stdout_lines: list[bytes] = field(default_factory=list)

    async def initialize(
        self, *, compaction: bool = False, capabilities: acp.schema.ClientCapabilities | None = None
    ) -> Any:
        """``compaction``: advertise ``session.compaction`` (the client renders compaction updates);
        ``capabilities``: advertise these instead."""
        if compaction:
            capabilities = acp.schema.ClientCapabilities(
                session=acp.schema.ClientSessionCapabilities(compaction=acp.schema.CompactionCapabilities())
            )
        with anyio.fail_after(START_TIMEOUT_S):
            if capabilities is not None:
                return await self.conn.initialize(protocol_version=1, client_capabilities=capabilities)
            return await self.conn.initialize(protocol_version=1)

    async def new_session(
        self,
        mcp_servers: Sequence[Mapping[str, Any]] = (),
        cwd: Path | None = None,
        *,
        timeout: float = START_TIMEOUT_S,
    ) -> str:
        with anyio.fail_after(timeout):
            response = await self.conn.new_session(cwd=str(cwd or self.workspace), mcp_servers=servers(mcp_servers))
        return response.session_id

    async def prompt(self, session_id: str, text: str, *, timeout: float = TURN_TIMEOUT_S) -> Any:
        with anyio.fail_after(timeout):
            return await self.conn.prompt(session_id=session_id, prompt=[text_block(text)])

    async def request(self, method: str, params: dict[str, Any], *, timeout: float = START_TIMEOUT_S) -> Any:
        """A raw JSON-RPC request, written to the agent's stdin beside the SDK client's frames (for methods the SDK
        client lacks, e.g. the legacy ``session/set_model``); its result, or ``AssertionError`` with its error."""
        request_id = f"raw-{len(self.raw.answers)}-{method}"
        assert self.process.stdin is not None
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(frame).encode() + b"\n")
        with anyio.fail_after(timeout):
            await self.process.stdin.drain()
            while request_id not in self.raw.answers:
                await self.raw.arrived.wait()
        answer = self.raw.answers[request_id]
        assert "error" not in answer, answer["error"]
        return answer.get("result")

    def updates(self, session_id: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        """Every ``session/update`` the agent sent, as sent: (session id, update), in order."""
        found = []
        for direction, message in self.frames.frames:
            if direction == "to_client" and message.get("method") == "session/update":
                params = message["params"]
                if session_id is None or params["sessionId"] == session_id:
                    found.append((params["sessionId"], params["update"]))
        return found

    def model_requests(self) -> list[RequestRecord]:
        """The chat requests the model server received, in order (model listing requests left out)."""
        return [r for r in self.model.requests() if r.method == "POST"]

    def offered_tools(self) -> list[list[str]]:
        """For each model request, the names of the tools it offered."""
        return [tool_names(r) for r in self.model_requests()]

    async def shutdown(self) -> int:
        """Close stdin (the editor went away) and wait for the agent to exit on its own; its exit status."""
        if self.process.stdin is not None and not self.process.stdin.is_closing():
            self.process.stdin.close()
        with anyio.fail_after(EXIT_TIMEOUT_S):
            return await self.process.wait()

    def assert_json_rpc_only(self) -> None:
        """Every stdout line is one JSON-RPC message (a request, notification or response), from the first byte."""
        assert self.stdout_lines, "the agent wrote nothing on stdout"
        for line in self.stdout_lines:
            message = json.loads(line)
            assert message["jsonrpc"] == "2.0", line
            assert "method" in message or "id" in message, line


def portable_env() -> dict[str, str]:
    """``HERMES_ACP_PORTABLE`` of the test run, passed on to the processes it starts (``make portable`` forces the
    portable paths in the real process too)."""
    forced = os.environ.get(PORTABLE_ENV)
    return {PORTABLE_ENV: forced} if forced else {}


def servers(specs: Sequence[Mapping[str, Any]]) -> list[Any]:
    """ACP ``mcpServers`` entries from their JSON shapes (stdio, http, sse)."""
    out: list[Any] = []
    for spec in specs:
        kind = spec.get("type")
        if kind == "http":
            out.append(acp.schema.HttpMcpServer.model_validate(spec))
        elif kind == "sse":
            out.append(acp.schema.SseMcpServer.model_validate(spec))
        else:
            out.append(acp.schema.McpServerStdio.model_validate(spec))
    return out


def tool_names(record: RequestRecord) -> list[str]:
    body = record.body or {}
    names = []
    for tool in body.get("tools") or []:
        names.append(tool["function"]["name"] if "function" in tool else tool["name"])
    return names


def _config(base_url: str, models: str, max_retries: int) -> str:
    return (
        '[model]\ndefault = "fx:m"\n\n'
        f'[providers.fx]\nkind = "openai"\nbase_url = "{base_url}"\nmodels = {models}\nmax_retries = {max_retries}\n'
    )


@contextlib.asynccontextmanager
async def spawn_agent(
    tmp_path: Path,
    scenario: dict[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    initialize: bool = True,
    client: RecordingClient | None = None,
    config_extra: str = "",
    models: str = '["m", "m2"]',
    max_retries: int = 0,
    sandbox: SandboxMode | None = DEFAULT_TEST_SANDBOX,
    config_at: Path | None = None,
) -> AsyncIterator[AgentProcess]:
    """The real agent against a scripted model (``scenario``: the model server's format; default: "Hello." for
    every request). ``config_extra`` is appended to config.toml (e.g. ``[permissions]`` or ``[agent]``);
    ``models`` is the provider's model list in TOML (e.g. to give ``m`` a ``context_window``); ``max_retries`` is
    the provider's (0: a failed request fails the turn at once); ``sandbox`` the ``[sandbox] mode`` pinned unless
    ``config_extra`` sets one (``tests/fakes/sandbox_pin.py``); ``config_at``: the config is written there instead of
    the home, and the agent started with ``--config`` naming it."""
    home = home or tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    stderr_path = tmp_path / "agent-stderr.log"
    scenario = scenario or {"name": "default", "responses": [{"steps": [{"text": "Hello."}], "repeat": True}]}
    async with serve_model_server(scenario) as model:
        config = _config(model.openai_base_url, models, max_retries) + config_extra
        (config_at or home / "config.toml").write_text(pin_sandbox(config, sandbox))
        process_env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "HERMES_ACP_HOME": str(home),
            "PYTHONPATH": str(REPO),
            **portable_env(),
            **(env or {}),
        }
        with stderr_path.open("ab") as stderr:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "hermes_acp",
                *(["--config", str(config_at)] if config_at else []),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                env=process_env,
                cwd=str(workspace),
                limit=FRAME_LIMIT,
            )
        assert process.stdout is not None
        assert process.stdin is not None
        tee = asyncio.StreamReader(limit=FRAME_LIMIT)
        recording = client or RecordingClient()
        frames = FrameLog()
        raw = RawAnswers()
        conn = acp.connect_to_agent(
            recording, process.stdin, tee, use_unstable_protocol=True, observers=[frames.observe_sent, raw.observe]
        )
        agent = AgentProcess(conn, process, recording, model, home, workspace, stderr_path, raw, frames)

        async def copy_stdout() -> None:
            assert process.stdout is not None
            while line := await process.stdout.readline():
                agent.stdout_lines.append(line)
                message = read_frame(line)
                frames.add("to_client", message)  # in the order sent, whatever the SDK's client makes of it
                if not hidden_from_the_sdk(message):
                    tee.feed_data(line)
            tee.feed_eof()

        async with anyio.create_task_group() as tg:
            tg.start_soon(copy_stdout)
            try:
                if initialize:
                    await agent.initialize()
                yield agent
            finally:
                await stop_agent(process, EXIT_TIMEOUT_S)
                # A killed agent's stdin is a broken pipe: the SDK's close may fail to flush it.
                with anyio.CancelScope(shield=True), contextlib.suppress(ConnectionError):
                    await conn.close()
        frames.check()
