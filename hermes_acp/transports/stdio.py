"""The server's process I/O: JSON-RPC frames on stdin/stdout, answered from the first byte; signals.

``serve_streams`` starts the dispatcher with one route, ``initialize`` (``Handshake``), so an editor has its answer
in milliseconds, and meanwhile loads the rest of the server in a worker thread: the app (``load_app``) installs the
other routes, and requests that arrived in the meantime are answered in order. It returns when the client has
gone and the app has shut down.

stdout carries JSON-RPC only: ``serve_stdio`` keeps a private duplicate of the real stdout for the protocol and
points file descriptor 1 at stderr (``platform.stdio.claim_stdout``), so a stray print (ours, a library's, a child
process's) cannot corrupt the channel. The bytes go through the event loop's pipe transports on Linux and macOS, or
through a reader and a writer thread (``stdio_threads``) on Windows and under ``HERMES_ACP_PORTABLE=stdio``
(``platform.stdio.threaded``); the connection is named after the transport (``stdio``, ``stdio-threads``).

The shutdown signals (``platform.signals``: SIGTERM, SIGINT and SIGHUP on POSIX; Ctrl-C, Ctrl-Break and closing the
console on Windows), and the client closing its end of stdout (on the pipes even while nothing is written; through
the threads at the next write), take the path of stdin's EOF (``Dispatcher.close_input``): turns are cancelled and
settled, sessions close with their child processes, and the process exits. This module imports neither pydantic
nor the rest of the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import sys
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.to_thread

from hermes_acp.jsonrpc.dispatcher import Dispatcher
from hermes_acp.jsonrpc.framing import LineReader
from hermes_acp.jsonrpc.link import ClientGone, LineWriter, Writer
from hermes_acp.platform import signals, stdio
from hermes_acp.protocol.connection import Connection, Serve

from .stdio_threads import ThreadReader, ThreadWriter

__all__ = ["PIPES", "THREADED", "FileWriter", "serve_stdio", "serve_streams"]

_log = logging.getLogger("hermes_acp.protocol")
PIPES = "stdio"
THREADED = "stdio-threads"
"""The connection's name for each transport (its id in the log: ``stdio-1``, ``stdio-threads-1``)."""


class FileWriter:
    """Output to a regular file (``hermes-acp > frames.jsonl``), where pipe transports do not work."""

    def __init__(self, fd: int):
        self._file = os.fdopen(fd, "wb", buffering=0)

    async def send(self, data: bytes) -> None:
        try:
            self._file.write(data)
        except OSError as exc:  # the file's disk is full or gone: nobody can read what follows
            raise ClientGone(f"the output file cannot be written: {exc}") from exc

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()


async def serve_streams(
    reader: asyncio.StreamReader,
    writer: Writer,
    load_app: Callable[[], Serve],
    env: Mapping[str, str] | None = None,
    *,
    started: Callable[[Dispatcher], None] | None = None,
    name: str = PIPES,
) -> None:
    """Serve one client on a byte stream and a ``Writer`` until it leaves (``started`` gets the dispatcher; ``name``
    names the connection, and so the transport, in the log)."""
    env = dict(os.environ) if env is None else env
    connection = Connection(LineReader(reader), writer, env, name=name)
    dispatcher = connection.dispatcher
    if started is not None:
        started(dispatcher)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(dispatcher.run, name="hermes-acp dispatcher")
            try:
                runner = await anyio.to_thread.run_sync(load_app)
            except Exception as exc:
                _log.exception("the server could not load")
                dispatcher.fail_routes(f"the server could not load: {type(exc).__name__}: {exc}")
                await dispatcher.finished.wait()
                return
            await runner(connection)
    finally:
        writer.close()


def serve_stdio(load_app: Callable[[], Serve]) -> None:
    """The ``hermes-acp`` server: protocol on the real stdout, everything else on stderr."""
    protocol_fd = stdio.claim_stdout()
    sys.stdout = sys.stderr
    asyncio.run(_serve_fds(sys.stdin.fileno(), protocol_fd, load_app))


async def _serve_fds(in_fd: int, out_fd: int, load_app: Callable[[], Serve]) -> None:
    loop = asyncio.get_running_loop()
    watching: list[Dispatcher] = []
    undo: list[Callable[[], None]] = []
    reader = asyncio.StreamReader(limit=1024 * 1024)

    def client_left() -> None:
        for dispatcher in watching:
            dispatcher.close_input()

    def started(dispatcher: Dispatcher) -> None:
        watching.append(dispatcher)

        def stop(name: str) -> None:
            """A termination signal stops reading: the EOF path, bounded, which leaves no child process behind."""
            _log.warning("%s received: shutting down", name)
            dispatcher.close_input()

        undo.append(signals.install_shutdown(loop, stop))

    if stdio.threaded():
        thread_reader = ThreadReader(in_fd, reader, loop)
        thread_reader.start()
        undo.append(thread_reader.close)
        writer: Writer = ThreadWriter(out_fd, loop, client_left)
        name = THREADED
    else:
        writer = await _open_pipes(loop, (in_fd, out_fd), reader, client_left, undo)
        name = PIPES
    try:
        await serve_streams(reader, writer, load_app, started=started, name=name)
    finally:
        for step in undo:
            step()


async def _open_pipes(
    loop: asyncio.AbstractEventLoop,
    fds: tuple[int, int],
    reader: asyncio.StreamReader,
    client_left: Callable[[], None],
    undo: list[Callable[[], None]],
) -> Writer:
    """The event loop's pipe transports: stdin watched when it can be (else read in a worker thread), stdout
    watched for the client closing its end."""
    in_fd, out_fd = fds
    read_pipe = os.fdopen(in_fd, "rb", buffering=0, closefd=False)
    if _pollable(in_fd):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), read_pipe)
    else:
        feeder = asyncio.create_task(_feed_from_thread(read_pipe, reader), name="hermes-acp stdin reader")

        def stop_feeder() -> None:
            feeder.cancel()

        undo.append(stop_feeder)
    if stat.S_ISREG(os.fstat(out_fd).st_mode):
        return FileWriter(out_fd)
    write_pipe = os.fdopen(out_fd, "wb", buffering=0)
    transport, protocol = await loop.connect_write_pipe(lambda: _WatchedPipe(client_left), write_pipe)
    return LineWriter(asyncio.StreamWriter(transport, protocol, reader, loop))


class _WatchedPipe(asyncio.streams.FlowControlMixin):
    """stdout's protocol: the client closing its end of the pipe (the reader gone, POLLERR) is the client leaving,
    even while nothing is being written."""

    def __init__(self, client_left: Callable[[], None]):
        super().__init__()
        self._client_left = client_left

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._client_left()


def _pollable(fd: int) -> bool:
    """Whether the event loop can watch ``fd``: a pipe, a socket or a terminal. A regular file (``< input.jsonl``)
    and other devices (``< /dev/null``, how the ACP Registry starts an agent to see it exit) cannot be polled: epoll
    refuses them, and the loop would wait for a read that never comes."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


async def _feed_from_thread(pipe: Any, reader: asyncio.StreamReader) -> None:
    """stdin cannot be polled (a regular file, ``/dev/null``): read it in a thread."""
    while True:
        data = await asyncio.to_thread(pipe.read, 65536)
        if not data:
            reader.feed_eof()
            return
        reader.feed_data(data)
