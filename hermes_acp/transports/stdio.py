"""The server's process I/O: JSON-RPC frames on stdin/stdout, answered from the first byte; signals.

``serve_streams`` starts the dispatcher with one route, ``initialize`` (``Handshake``), so an editor has its answer
in milliseconds, and meanwhile loads the rest of the server in a worker thread: the app (``load_app``) installs the
other routes, and requests that arrived in the meantime are answered in order. It returns when the client has
gone and the app has shut down.

stdout carries JSON-RPC only: ``serve_stdio`` keeps a private duplicate of the real stdout for the protocol and
points file descriptor 1 at stderr, so a stray print (ours, a library's, a child process's) cannot corrupt the
channel. SIGTERM, SIGINT and SIGHUP, and the client closing its end of stdout (even while nothing is written), take
the path of stdin's EOF (``Dispatcher.close_input``): turns are cancelled and settled, sessions close with their
child processes, and the process exits. This module imports neither
pydantic nor the rest of the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import stat
import sys
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.to_thread

from hermes_acp.jsonrpc.dispatcher import Dispatcher
from hermes_acp.jsonrpc.framing import LineReader
from hermes_acp.jsonrpc.link import ClientGone, LineWriter, Writer
from hermes_acp.protocol.connection import Connection, Serve

__all__ = ["FileWriter", "serve_stdio", "serve_streams"]

_log = logging.getLogger("hermes_acp.protocol")
_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


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
) -> None:
    """Serve one client on a byte stream and a ``Writer`` until it leaves (``started`` gets the dispatcher)."""
    env = dict(os.environ) if env is None else env
    connection = Connection(LineReader(reader), writer, env)
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
    protocol_fd = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    asyncio.run(_serve_fds(sys.stdin.fileno(), protocol_fd, load_app))


async def _serve_fds(in_fd: int, out_fd: int, load_app: Callable[[], Serve]) -> None:
    loop = asyncio.get_running_loop()
    watching: list[Dispatcher] = []
    reader = asyncio.StreamReader(limit=1024 * 1024)
    read_pipe = os.fdopen(in_fd, "rb", buffering=0, closefd=False)
    feeder: asyncio.Task[None] | None = None
    if _pollable(in_fd):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), read_pipe)
    else:
        feeder = asyncio.create_task(_feed_from_thread(read_pipe, reader), name="hermes-acp stdin reader")
    writer: Writer
    if stat.S_ISREG(os.fstat(out_fd).st_mode):
        writer = FileWriter(out_fd)
    else:
        write_pipe = os.fdopen(out_fd, "wb", buffering=0)
        transport, protocol = await loop.connect_write_pipe(lambda: _WatchedPipe(watching), write_pipe)
        writer = LineWriter(asyncio.StreamWriter(transport, protocol, reader, loop))

    def started(dispatcher: Dispatcher) -> None:
        watching.append(dispatcher)
        _on_signals(loop, dispatcher)

    try:
        await serve_streams(reader, writer, load_app, started=started)
    finally:
        for signum in _SIGNALS:
            loop.remove_signal_handler(signum)
        if feeder is not None:
            feeder.cancel()


class _WatchedPipe(asyncio.streams.FlowControlMixin):
    """stdout's protocol: the client closing its end of the pipe (the reader gone, POLLERR) is the client leaving,
    even while nothing is being written."""

    def __init__(self, dispatchers: list[Dispatcher]):
        super().__init__()
        self._dispatchers = dispatchers

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        for dispatcher in self._dispatchers:
            dispatcher.close_input()


def _on_signals(loop: asyncio.AbstractEventLoop, dispatcher: Dispatcher) -> None:
    """A termination signal stops reading: the EOF path, bounded, which leaves no child process behind."""

    def handle(signum: int) -> None:
        _log.warning("%s received: shutting down", signal.Signals(signum).name)
        dispatcher.close_input()

    for signum in _SIGNALS:
        loop.add_signal_handler(signum, handle, signum)


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
