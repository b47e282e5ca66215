"""In-process hermes-acp over a real NDJSON connection pair (a socketpair): the production front door and
agent on one end, the acp SDK's client on the other. Models come from a ``ScriptedProvider`` (or any provider).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
import anyio
from acp import schema
from acp.client.connection import ClientSideConnection

from hermes_acp.app import serve_app
from hermes_acp.config import Settings, load_settings
from hermes_acp.jsonrpc.link import LineWriter
from hermes_acp.protocol.connection import Connection, Serve
from hermes_acp.providers.base import ModelProvider
from hermes_acp.providers.catalog import CatalogModel, ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.providers.scripted import ScriptedProvider
from hermes_acp.sessions import derive_tool_surface
from hermes_acp.sessions.tool_surface import SurfaceView
from hermes_acp.storage.base import SessionStore
from hermes_acp.storage.sqlite import SqliteSessionStore
from hermes_acp.tools.base import AnyTool
from hermes_acp.transports.stdio import serve_streams

from .acp_client import RecordingClient, text_block
from .acp_schema import FrameLog
from .sandbox_pin import DEFAULT_TEST_SANDBOX, SandboxMode, pin_sandbox

__all__ = ["Pair", "RawPair", "open_pair", "open_raw", "scripted_model", "socket_streams"]


def scripted_model(
    model_id: str = "scripted:model", *, vision: bool = False, context_window: int = 32_000
) -> CatalogModel:
    provider_id, _, model = model_id.partition(":")
    return CatalogModel(
        id=model_id,
        provider_id=provider_id,
        model=model,
        name=model,
        vision=vision,
        context_window=context_window,
        max_output_tokens=None,
        api_key_env=None,
        usable=True,
    )


SESSION_TIMEOUT_S = 10.0
TURN_TIMEOUT_S = 60.0
"""The longest a test turn legitimately takes: its first model request waits for the session's MCP servers to
start (tests/mcp, ``START_S``). Scripted turns take milliseconds; this bound only turns a hang into a failure."""


@dataclass
class Pair:
    conn: ClientSideConnection
    client: RecordingClient
    settings: Settings
    store: SessionStore
    provider: ScriptedProvider | None
    workspace: Path

    async def new_session(
        self,
        cwd: Path | None = None,
        *,
        timeout: float = SESSION_TIMEOUT_S,
        mcp_servers: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> str:
        """A session in ``cwd`` (default: the workspace); ``mcp_servers`` are raw entries, as an editor sends them."""
        servers = [_server_model(entry) for entry in mcp_servers or []]
        with anyio.fail_after(timeout):
            response = await self.conn.new_session(cwd=str(cwd or self.workspace), mcp_servers=servers, **kwargs)
        return response.session_id

    async def prompt(self, session_id: str, text: str, *, timeout: float = TURN_TIMEOUT_S) -> Any:
        with anyio.fail_after(timeout):
            return await self.conn.prompt(session_id=session_id, prompt=[text_block(text)])

    async def request(self, method: str, params: dict[str, Any], *, timeout: float = SESSION_TIMEOUT_S) -> Any:
        """A request the SDK client has no method for (the unstable metadata methods, our ``_session/*``
        extensions), sent on its connection, so its frames are recorded and schema-checked like the others; a
        JSON-RPC error raises ``acp.RequestError``."""
        with anyio.fail_after(timeout):
            return await self.conn._conn.send_request(method, params)


def _server_model(entry: dict[str, Any]) -> Any:
    kind = entry.get("type")
    if kind == "http":
        return schema.HttpMcpServer.model_validate(entry)
    if kind == "sse":
        return schema.SseMcpServer.model_validate(entry)
    return schema.McpServerStdio.model_validate(entry)


def _settings(tmp_path: Path, config: str | None, env: Mapping[str, str], sandbox: SandboxMode | None) -> Settings:
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    if config is not None or sandbox is not None:
        (home / "config.toml").write_text(pin_sandbox(config or "", sandbox))
    return load_settings({**env, "HERMES_ACP_HOME": str(home)})


@contextlib.asynccontextmanager
async def socket_streams() -> AsyncIterator[
    tuple[asyncio.StreamReader, asyncio.StreamWriter, asyncio.StreamReader, asyncio.StreamWriter]
]:
    """Both ends of a socketpair as asyncio streams: (agent reader, agent writer, client reader, client writer).
    The writers are closed on the way out (an unclosed one is a ResourceWarning, an error under this suite)."""
    agent_sock, client_sock = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=agent_sock)
    client_reader, client_writer = await asyncio.open_connection(sock=client_sock)
    try:
        yield agent_reader, agent_writer, client_reader, client_writer
    finally:
        for writer in (agent_writer, client_writer):
            writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await writer.wait_closed()


@contextlib.asynccontextmanager
async def _running_server(
    tmp_path: Path,
    agent_reader: asyncio.StreamReader,
    agent_writer: asyncio.StreamWriter,
    *,
    provider: ModelProvider | None,
    models: list[CatalogModel] | None,
    config: str | None,
    env: Mapping[str, str],
    tools: Sequence[AnyTool] = (),
    sandbox: SandboxMode | None = DEFAULT_TEST_SANDBOX,
) -> AsyncIterator[tuple[Settings, SessionStore]]:
    settings = _settings(tmp_path, config, env, sandbox)
    env = {**env, "HERMES_ACP_HOME": str(settings.home)}
    store = await SqliteSessionStore.open(settings.state_db)
    if models is None:
        models = [scripted_model()] if provider is not None else []
    catalog = ModelCatalog(models, models[0].id if models else None)
    overrides = {provider.provider_id: provider} if provider is not None else {}
    registry = ProviderRegistry(settings, env, overrides=overrides)

    def tool_surface(session: SurfaceView) -> Sequence[AnyTool]:
        return [*derive_tool_surface(session), *tools]

    async def runner(connection: Connection) -> None:
        await serve_app(
            connection,
            settings=settings,
            env=env,
            catalog=catalog,
            providers=registry,
            store=store,
            tool_surface=tool_surface,
        )

    def load() -> Serve:
        return runner

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve_streams, agent_reader, LineWriter(agent_writer), load, dict(env))
        try:
            yield settings, store
        finally:
            agent_writer.close()
            tg.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def open_pair(
    tmp_path: Path,
    *,
    provider: ScriptedProvider | None = None,
    models: list[CatalogModel] | None = None,
    config: str | None = None,
    env: Mapping[str, str] | None = None,
    client: RecordingClient | None = None,
    client_capabilities: dict[str, Any] | None = None,
    initialize: bool = True,
    tools: Sequence[AnyTool] = (),
    sandbox: SandboxMode | None = DEFAULT_TEST_SANDBOX,
) -> AsyncIterator[Pair]:
    """hermes-acp served in-process; ``conn`` is an initialized acp client connection to it. ``sandbox``: the
    ``[sandbox] mode`` pinned in its config unless ``config`` sets one (``tests/fakes/sandbox_pin.py``)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    client = client or RecordingClient()
    async with (
        socket_streams() as (agent_reader, agent_writer, client_reader, client_writer),
        _running_server(
            tmp_path,
            agent_reader,
            agent_writer,
            provider=provider,
            models=models,
            config=config,
            env=env or {},
            tools=tools,
            sandbox=sandbox,
        ) as (settings, store),
    ):
        frames = FrameLog()
        conn = acp.connect_to_agent(
            client, client_writer, client_reader, use_unstable_protocol=True, observers=[frames.observe]
        )
        try:
            if initialize:
                with anyio.fail_after(5):
                    await conn.initialize(
                        protocol_version=1,
                        client_capabilities=acp.schema.ClientCapabilities.model_validate(client_capabilities or {}),
                    )
            yield Pair(conn, client, settings, store, provider, workspace)
        finally:
            await conn.close()
        frames.check()


@dataclass
class RawPair:
    """Raw NDJSON access to the server: write any bytes, read JSON lines back."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    frames: FrameLog = field(default_factory=FrameLog)
    """What the server wrote (checked against the ACP schema when the pair closes; what the test writes may be
    malformed on purpose)."""

    async def send(self, payload: bytes | dict[str, Any]) -> None:
        if isinstance(payload, dict):
            self.frames.add("to_agent", payload)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode() + b"\n"
        self.writer.write(data)
        await self.writer.drain()

    async def receive(self, timeout: float = 5.0) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            line = await self.reader.readline()
        assert line, "the server closed the connection"
        message = json.loads(line)
        assert isinstance(message, dict)
        self.frames.add("to_client", message)
        return message

    async def response(self, request_id: Any, timeout: float = 5.0) -> dict[str, Any]:
        """The response to ``request_id`` (notifications before it are skipped)."""
        with anyio.fail_after(timeout):
            while True:
                message = await self.receive(timeout)
                if message.get("id") == request_id and "method" not in message:
                    return message


@contextlib.asynccontextmanager
async def open_raw(
    tmp_path: Path,
    *,
    provider: ScriptedProvider | None = None,
    tools: Sequence[AnyTool] = (),
    config: str | None = None,
) -> AsyncIterator[RawPair]:
    async with (
        socket_streams() as (agent_reader, agent_writer, client_reader, client_writer),
        _running_server(
            tmp_path, agent_reader, agent_writer, provider=provider, models=None, config=config, env={}, tools=tools
        ),
    ):
        raw = RawPair(client_reader, client_writer)
        yield raw
        raw.frames.check(only="to_client")
