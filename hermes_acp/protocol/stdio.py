"""The front door: newline-delimited JSON-RPC on stdin/stdout, answered from the first byte.

``FrontDoor`` reads frames and checks each envelope before the SDK sees it: malformed JSON gets -32700, an
envelope that is not a JSON-RPC message gets -32600, and the server keeps serving (the SDK would drop such lines
silently). It answers ``initialize`` itself from ``initialize.py``, so an editor has its answer while the acp SDK
and the rest of the server still load in a worker thread (importing them costs most of a second on a small
machine), and hands ``session/new`` to ``EarlySessions`` between ``open_early`` and ``close_early`` (``early.py``).
Everything else is queued and handed to the SDK connection, which reads from the door as its ``Transport``; a
request that opens a session first gets the MCP entries the SDK will skip noted in its ``_meta`` (``mcp_entries.py``).
After writing a response it runs the callbacks the handler queued with ``boundary.after_response``.

stdout carries JSON-RPC only: ``serve_stdio`` keeps a private duplicate of the real stdout for the protocol and
points file descriptor 1 at stderr, so a stray print (ours, a library's, a child process's) cannot corrupt the
channel. This module imports neither the SDK nor the rest of the server at import time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import stat
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .initialize import initialize_result
from .mcp_entries import note_skipped_servers

if TYPE_CHECKING:
    from .early import EarlySessions

__all__ = ["ConnectionRunner", "FileWriter", "FrontDoor", "Writer", "serve_stdio", "serve_streams"]

_log = logging.getLogger("hermes_acp.protocol")
ConnectionRunner = Callable[["FrontDoor", Mapping[str, str]], Awaitable[None]]
"""Serves the SDK connection over the door until the client goes away."""
MAX_LINE_BYTES = 50 * 1024 * 1024
HOOK_TIMEOUT_S = 10.0
EOF_GRACE_S = 30.0
"""After stdin closes, requests already received may finish for this long (``hermes-acp < frames.jsonl``)."""


class Writer(Protocol):
    """What the door needs of its output: an ``asyncio.StreamWriter`` or ``FileWriter``."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


class FileWriter:
    """Output to a regular file (``hermes-acp > frames.jsonl``), where pipe transports do not work."""

    def __init__(self, fd: int):
        self._file = os.fdopen(fd, "wb", buffering=0)

    def write(self, data: bytes) -> None:
        self._file.write(data)

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        self._file.close()


class FrontDoor:
    """A message-level transport (``send``/``receive``/``close``) in front of the SDK connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: Writer, env: Mapping[str, str]):
        self._reader = reader
        self._writer = writer
        self._env = env
        self._inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._write_lock = asyncio.Lock()
        self._closed = False
        self._unanswered: set[object] = set()
        self._all_answered = asyncio.Event()
        self._all_answered.set()
        self.initialize_params: dict[str, Any] | None = None
        """The params of the client's ``initialize``, answered here."""
        self.on_initialize: Callable[[dict[str, Any]], None] | None = None
        self._early: EarlySessions | None = None
        """Set (``open_early``) while the server loads: answers ``session/new`` before the SDK connection exists."""
        self._ingress = asyncio.Lock()
        """Held while one incoming message is answered early or queued, so both keep the order of arrival."""

    # -- the Transport protocol of the acp SDK --------------------------------------------------------------------

    async def receive(self) -> dict[str, Any] | None:
        return await self._inbox.get()

    async def send(self, message: dict[str, Any]) -> None:
        await self._write(message)
        if "method" not in message and "id" in message:
            self._unanswered.discard(message["id"])
            if not self._unanswered:
                self._all_answered.set()
            from .boundary import take_after_response

            for callback in take_after_response():
                try:
                    await asyncio.wait_for(callback(), HOOK_TIMEOUT_S)
                except Exception:
                    _log.exception("post-response work failed")

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._writer.close()

    # -- reading --------------------------------------------------------------------------------------------------

    async def pump(self) -> None:
        """Read frames until EOF; answer what the door answers itself, queue the rest for the SDK."""
        try:
            while True:
                line = await self._read_line()
                if line is None:
                    break
                if line.strip():
                    await self._handle_line(line)
            try:
                await asyncio.wait_for(self._all_answered.wait(), EOF_GRACE_S)
            except TimeoutError:
                _log.warning("stdin closed with %d request(s) still running; stopping them", len(self._unanswered))
        finally:
            self._inbox.put_nowait(None)

    async def _read_line(self) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                chunk = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if not exc.partial and not chunks:
                    return None
                return b"".join([*chunks, exc.partial])
            except asyncio.LimitOverrunError as exc:
                chunk = await self._reader.readexactly(exc.consumed)
                size += len(chunk)
                if size <= MAX_LINE_BYTES:
                    chunks.append(chunk)
                continue
            size += len(chunk)
            if size > MAX_LINE_BYTES:
                await self._reply_error(None, -32600, f"Invalid request: message larger than {MAX_LINE_BYTES} bytes")
                return b""
            chunks.append(chunk)
            return b"".join(chunks)

    async def _handle_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            await self._reply_error(None, -32700, f"Parse error: {exc}")
            return
        problem = _envelope_problem(message)
        if problem is not None:
            request_id = message.get("id") if isinstance(message, dict) and _valid_id(message.get("id")) else None
            await self._reply_error(request_id, -32600, f"Invalid request: {problem}")
            return
        if message.get("method") == "initialize" and "id" in message:
            await self._answer_initialize(message)
            return
        note_skipped_servers(message)
        async with self._ingress:
            if await self._answered_early(message):
                return
            if "method" in message and "id" in message:
                self._unanswered.add(message["id"])
                self._all_answered.clear()
            self._inbox.put_nowait(message)

    async def _answered_early(self, message: dict[str, Any]) -> bool:
        if self._early is None or message.get("method") != "session/new" or "id" not in message:
            return False
        answered = await self._early.answer(message.get("params"))
        if answered is None:
            return False
        result, notifications = answered
        await self._write({"jsonrpc": "2.0", "id": message["id"], "result": result})
        for params in notifications:
            await self._write({"jsonrpc": "2.0", "method": "session/update", "params": params})
        return True

    async def open_early(self, early: EarlySessions) -> None:
        """Start answering ``session/new`` early, beginning with those already waiting for the SDK (in order)."""
        async with self._ingress:
            self._early = early
            waiting: list[dict[str, Any] | None] = []
            while not self._inbox.empty():
                waiting.append(self._inbox.get_nowait())
            for message in waiting:
                if message is not None and await self._answered_early(message):
                    self._unanswered.discard(message["id"])
                    if not self._unanswered:
                        self._all_answered.set()
                    continue
                self._inbox.put_nowait(message)

    async def close_early(self) -> EarlySessions | None:
        """Stop answering early (after an answer in flight); what answered so far, or None if nothing did."""
        async with self._ingress:
            early, self._early = self._early, None
            return early

    async def _answer_initialize(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        if not isinstance(params, dict) or "protocolVersion" not in params:
            await self._reply_error(
                message["id"], -32602, "Invalid params: protocolVersion: required (an integer, e.g. 1)"
            )
            return
        self.initialize_params = params
        await self._write({"jsonrpc": "2.0", "id": message["id"], "result": initialize_result(params, self._env)})
        if self.on_initialize is not None:
            self.on_initialize(params)

    # -- writing --------------------------------------------------------------------------------------------------

    async def _reply_error(self, request_id: Any, code: int, message: str) -> None:
        _log.warning("rejected a frame: %s", message)
        await self._write({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    async def _write(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError("the client connection is closed")
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        async with self._write_lock:
            self._writer.write(data)
            await self._writer.drain()


def _valid_id(value: object) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _envelope_problem(message: object) -> str | None:
    if isinstance(message, list):
        return "batch requests are not supported"
    if not isinstance(message, dict):
        return "a JSON-RPC message must be an object"
    if message.get("jsonrpc") != "2.0":
        return 'the "jsonrpc" member must be "2.0"'
    if "id" in message and not _valid_id(message["id"]):
        return '"id" must be a string, an integer or null'
    if "method" in message:
        if not isinstance(message["method"], str) or not message["method"]:
            return '"method" must be a non-empty string'
        if "params" in message and not isinstance(message["params"], dict | list):
            return '"params" must be an object'
        return None
    if "id" not in message:
        return 'a message needs a "method" (request or notification) or an "id" (response)'
    if "result" not in message and "error" not in message:
        return 'a response needs a "result" or an "error"'
    return None


async def serve_streams(
    reader: asyncio.StreamReader,
    writer: Writer,
    load_runner: Callable[[], ConnectionRunner],
    env: Mapping[str, str] | None = None,
) -> None:
    """Serve one client on a pair of streams until it closes its end."""
    env = dict(os.environ) if env is None else env
    door = FrontDoor(reader, writer, env)
    pump = asyncio.create_task(door.pump(), name="hermes-acp front door")
    try:
        runner = await asyncio.to_thread(load_runner)
        await runner(door, env)
    finally:
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pump
        await door.close()


def serve_stdio(load_runner: Callable[[], ConnectionRunner]) -> None:
    """The ``hermes-acp`` server: protocol on the real stdout, everything else on stderr."""
    protocol_fd = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    asyncio.run(_serve_fds(sys.stdin.fileno(), protocol_fd, load_runner))


async def _serve_fds(in_fd: int, out_fd: int, load_runner: Callable[[], ConnectionRunner]) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1024 * 1024)
    read_pipe = os.fdopen(in_fd, "rb", buffering=0, closefd=False)
    feeder: asyncio.Task[None] | None = None
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), read_pipe)
    except ValueError:
        feeder = asyncio.create_task(_feed_from_thread(read_pipe, reader), name="hermes-acp stdin reader")
    writer: Writer
    if stat.S_ISREG(os.fstat(out_fd).st_mode):
        writer = FileWriter(out_fd)
    else:
        write_pipe = os.fdopen(out_fd, "wb", buffering=0)
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, write_pipe)
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    try:
        await serve_streams(reader, writer, load_runner)
    finally:
        if feeder is not None:
            feeder.cancel()


async def _feed_from_thread(pipe: Any, reader: asyncio.StreamReader) -> None:
    """stdin is a regular file (``< input.jsonl``): read it in a thread."""
    while True:
        data = await asyncio.to_thread(pipe.read, 65536)
        if not data:
            reader.feed_eof()
            return
        reader.feed_data(data)
