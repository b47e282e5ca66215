"""stdio through two threads: a reader thread feeds stdin into the event loop's ``StreamReader``, a writer thread
writes the frames the dispatcher sends to stdout. Where the event loop cannot watch the standard handles (Windows:
its Proactor loop only takes overlapped handles, and an inherited pipe is not one) and on Linux and macOS under
``HERMES_ACP_PORTABLE=stdio``, so that this code runs in every CI (``platform.stdio.threaded``).

- ``ThreadReader``: a daemon thread, blocking ``os.read`` in chunks, each handed to the loop
  (``call_soon_threadsafe``); the end of stdin (or a read error) becomes the reader's EOF, the server's usual way
  out. It is asyncio's ``ReadTransport`` of that reader, so the reader's own flow control pauses it while more
  than twice the reader's limit waits unread. It is never joined: a read blocked on stdin cannot be interrupted on
  Windows, and a daemon thread does not hold the process's exit.
- ``ThreadWriter``: the dispatcher's ``Writer``. ``send`` queues the frame and returns at once while less than
  ``HIGH_WATER`` bytes wait, else when the thread has written them down to ``LOW_WATER`` (the dispatcher's write
  timeout covers a client that stops reading). A failed write (the client closed its end: EPIPE, or EINVAL on
  Windows) is the client leaving: every later ``send`` raises ``ClientGone`` and ``on_gone`` is called on the loop,
  which takes the EOF path. ``close`` lets the thread write what is queued, bounded by ``CLOSE_FLUSH_S``.

Knows bytes and threads; nothing of JSON-RPC.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

from hermes_acp.jsonrpc.link import ClientGone

__all__ = ["CLOSE_FLUSH_S", "HIGH_WATER", "LOW_WATER", "READ_CHUNK", "ThreadReader", "ThreadWriter"]

READ_CHUNK = 65536
HIGH_WATER = 1 << 20
"""Bytes queued for the writer thread before ``send`` waits."""
LOW_WATER = 1 << 18
"""What a waiting ``send`` waits for the queue to come down to."""
CLOSE_FLUSH_S = 1.0
"""How long ``close`` waits for the queued frames to be written."""


def _post(loop: asyncio.AbstractEventLoop, callback: Callable[..., Any], *args: Any) -> bool:
    """Run ``callback`` on the loop, from another thread; False once the loop is closed (the server is done)."""
    try:
        loop.call_soon_threadsafe(callback, *args)
    except RuntimeError:
        return False
    return True


class ThreadReader(asyncio.ReadTransport):
    """``fd`` read by a daemon thread into ``reader`` (see the module docstring)."""

    def __init__(self, fd: int, reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop):
        super().__init__()
        self._fd = fd
        self._reader = reader
        self._loop = loop
        self._reading = threading.Event()
        self._reading.set()
        self._closing = False
        reader.set_transport(self)
        self._thread = threading.Thread(target=self._run, name="hermes-acp stdin", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def pause_reading(self) -> None:
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    def is_reading(self) -> bool:
        return self._reading.is_set() and not self._closing

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        """Stop handing chunks to the loop (a read under way finishes in the thread, unseen)."""
        self._closing = True
        self._reading.set()

    def _run(self) -> None:
        while True:
            self._reading.wait()
            if self.is_closing():
                return
            try:
                data = os.read(self._fd, READ_CHUNK)
            except OSError:
                data = b""
            if self.is_closing():  # closed while the read was under way
                return
            if not data:
                _post(self._loop, self._reader.feed_eof)
                return
            if not _post(self._loop, self._reader.feed_data, data):
                return


class ThreadWriter:
    """``fd`` written by a daemon thread: the ``Writer`` the dispatcher sends frames to (see the module docstring)."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop, on_gone: Callable[[], None]):
        self._fd = fd
        self._loop = loop
        self._on_gone = on_gone
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._sent = 0
        """Bytes handed to the thread (counted on the loop)."""
        self._written = 0
        """Bytes the thread is done with (counted in the thread)."""
        self._waiting = False
        """A ``send`` waits for room: the thread wakes it once the queue is down to ``LOW_WATER``."""
        self._room = asyncio.Event()
        self._gone: str | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="hermes-acp stdout", daemon=True)
        self._thread.start()

    async def send(self, data: bytes) -> None:
        self._check()
        self._sent += len(data)
        self._queue.put(data)
        if self._sent - self._written <= HIGH_WATER:
            return
        self._room.clear()
        self._waiting = True
        try:
            if self._sent - self._written > LOW_WATER and self._gone is None:  # the thread may have caught up already
                await self._room.wait()
        finally:
            self._waiting = False
        self._check()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join(CLOSE_FLUSH_S)

    def _check(self) -> None:
        if self._gone is not None:
            raise ClientGone(f"the client's end of stdout is closed: {self._gone}")
        if self._closed:
            raise ClientGone("stdout is closed")

    def _failed(self) -> None:
        self._room.set()
        self._on_gone()

    def _run(self) -> None:
        while (data := self._queue.get()) is not None:
            if self._gone is None:
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(self._fd, view) :]
                except OSError as exc:
                    self._gone = str(exc) or type(exc).__name__
                    _post(self._loop, self._failed)
            self._written += len(data)  # written, or dropped after the client left
            if self._waiting and self._sent - self._written <= LOW_WATER:
                _post(self._loop, self._room.set)
        with contextlib.suppress(OSError):
            os.close(self._fd)
