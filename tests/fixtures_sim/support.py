"""A tiny newline JSON-RPC client that spawns the simulated cua-driver over real stdio pipes.

Tests use it instead of an MCP SDK so they can see exactly what is on the wire: garbage lines, half-written
frames, missing answers, the raw structuredContent with its non-standard keys. Stderr goes to a file in the
test's temporary directory, so a chatty driver can never block on a full pipe.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from fixtures.cua_driver_sim import (
    CALCULATOR_PID,
    CALCULATOR_WINDOW_ID,
    TEXT_EDITOR_PID,
    TEXT_EDITOR_WINDOW_ID,
    command,
    read_journal,
    read_state,
)
from fixtures.cua_driver_sim.launcher import DesktopState, JournalEntry
from fixtures.cua_driver_sim.png import png_size

JsonObject = dict[str, Any]
IO_TIMEOUT = 10.0
MAX_LINE = 64 * 1024 * 1024
CLIENT_INFO = {"name": "fixtures-sim-tests", "version": "0"}
CALC: JsonObject = {"pid": CALCULATOR_PID, "window_id": CALCULATOR_WINDOW_ID}
EDITOR: JsonObject = {"pid": TEXT_EDITOR_PID, "window_id": TEXT_EDITOR_WINDOW_ID}


class ToolResult:
    """One tools/call result, with its parts split by type."""

    def __init__(self, raw: JsonObject) -> None:
        self.raw = raw
        self.is_error = raw.get("isError") is True
        self.structured: JsonObject = raw.get("structuredContent") or {}
        self.texts = [part["text"] for part in raw["content"] if part["type"] == "text"]
        self.images = [base64.b64decode(part["data"]) for part in raw["content"] if part["type"] == "image"]
        self.part_types = [part["type"] for part in raw["content"]]

    @property
    def text(self) -> str:
        return "\n".join(self.texts)

    @property
    def code(self) -> str | None:
        """The refusal code, whichever shape (A: refusal.code, B/C: code) carries it."""
        refusal = self.structured.get("refusal")
        if isinstance(refusal, dict):
            return str(refusal["code"])
        code = self.structured.get("code")
        return str(code) if code is not None else None

    def image_size(self) -> tuple[int, int]:
        assert len(self.images) == 1, self.part_types
        return png_size(self.images[0])


class SimClient:
    def __init__(self, process: Process, tmp_path: Path) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self.process = process
        self.stdin = process.stdin
        self.stdout = BufferedByteReceiveStream(process.stdout)
        self.stderr_path = tmp_path / "stderr.log"
        self.journal_path = tmp_path / "journal.jsonl"
        self.state_path = tmp_path / "state.json"
        self.next_id = 0

    async def send(self, message: JsonObject) -> None:
        await self.send_raw(json.dumps(message).encode() + b"\n")

    async def send_raw(self, data: bytes) -> None:
        await self.stdin.send(data)

    async def read_line(self) -> bytes:
        with anyio.fail_after(IO_TIMEOUT):
            return await self.stdout.receive_until(b"\n", MAX_LINE)

    async def read_message(self) -> JsonObject:
        message: JsonObject = json.loads(await self.read_line())
        return message

    async def send_request(self, method: str, params: JsonObject | None = None) -> int:
        self.next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        return self.next_id

    async def request(self, method: str, params: JsonObject | None = None) -> JsonObject:
        request_id = await self.send_request(method, params)
        response = await self.read_message()
        assert response["id"] == request_id, response
        return response

    async def initialize(self) -> JsonObject:
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT_INFO}
        response = await self.request("initialize", params)
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return response

    async def call(self, tool: str, **arguments: Any) -> ToolResult:
        response = await self.request("tools/call", {"name": tool, "arguments": arguments})
        assert "result" in response, response
        return ToolResult(response["result"])

    async def tools(self) -> dict[str, JsonObject]:
        response = await self.request("tools/list")
        return {tool["name"]: tool for tool in response["result"]["tools"]}

    async def tokens(self, pid: int, window_id: int, **extra: Any) -> dict[str, str]:
        """Read the window with elements and map each element label (or key-ish description) to its token."""
        result = await self.call("get_window_state", pid=pid, window_id=window_id, tree_format="elements", **extra)
        assert not result.is_error, result.text
        return {str(element.get("label", element["element_index"])): element["element_token"]
                for element in result.structured["elements"]}  # fmt: skip

    def stderr(self) -> bytes:
        return self.stderr_path.read_bytes()

    def journal(self) -> list[JournalEntry]:
        return read_journal(self.journal_path)

    def state(self) -> DesktopState:
        return read_state(self.state_path)

    async def wait_exit(self) -> int:
        with anyio.fail_after(IO_TIMEOUT):
            return await self.process.wait()


@asynccontextmanager
async def open_sim(
    tmp_path: Path,
    *,
    profile: str = "0.37",
    faults: Sequence[Mapping[str, Any]] | None = None,
    apps: Sequence[str] | None = None,
    initialize: bool = True,
    platform: str = "linux",
) -> AsyncIterator[SimClient]:
    argv, env = command(
        profile=profile,
        faults=faults,
        journal=tmp_path / "journal.jsonl",
        state=tmp_path / "state.json",
        apps=apps,
        platform=platform,
    )
    with open(tmp_path / "stderr.log", "wb") as stderr:
        process = await anyio.open_process(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=stderr, cwd=os.fspath(tmp_path))  # fmt: skip
    async with process:
        client = SimClient(process, tmp_path)
        try:
            if initialize:
                await client.initialize()
            yield client
        finally:
            with anyio.CancelScope(shield=True):
                await _shutdown(client)


async def _shutdown(client: SimClient) -> None:
    process = client.process
    if process.returncode is None:
        await client.stdin.aclose()
        with anyio.move_on_after(5):
            await process.wait()
    if process.returncode is None:
        process.kill()
        with anyio.fail_after(IO_TIMEOUT):
            await process.wait()
