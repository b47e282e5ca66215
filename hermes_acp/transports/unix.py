"""The session host's Unix-socket door: a connection on ``host.sock`` becomes a ``Connection``, or a control
request the host answers.

A connection is taken only from a process of the same user (the peer's uid, ``paths.peer_problem`` through
``platform.peers``: ``SO_PEERCRED`` on Linux, ``LOCAL_PEERCRED`` on macOS), and starts with one line (``paths``):

- a front door's hello: with the same version it is answered ``ok`` and becomes a ``Connection`` (a
  ``jsonrpc.framing.LineReader`` and a ``jsonrpc.link.LineWriter`` over the socket) handed to ``serve``, with the
  environment the hello carried (its keys and variables for the sessions it opens); with another version it is
  refused with what to do;
- a control request (``status``, ``stop``, ``token``): handed to ``control``, and its answer written as one line.

A line that is neither, or none within ``HELLO_TIMEOUT_S``, closes the connection. This module knows the socket and
its first line; what a control request does, and the app that serves a connection, are the host's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from hermes_acp.jsonrpc.framing import LineReader
from hermes_acp.jsonrpc.link import LineWriter
from hermes_acp.platform import peers, unix_sockets
from hermes_acp.protocol.connection import Connection, Serve
from hermes_acp.telemetry import get_logger
from hermes_acp.version import __version__

from .paths import CONTROL_KEY, HELLO_KEY, MAX_HELLO_BYTES, decode_line, encode_line, peer_problem

__all__ = ["HELLO_TIMEOUT_S", "Control", "UnixDoor"]

_log = get_logger("hermes_acp.host")
HELLO_TIMEOUT_S = 10.0
"""How long a new connection may take to send its first line."""
Control = Callable[[str], Awaitable[dict[str, Any]]]
"""The host's answer to a control request (``status``, ``stop``, ``token``)."""


class UnixDoor:
    """The socket's connections: ``serve`` gets each front door's, ``control`` each control request; ``home`` names
    the home in what a front door of another version is told."""

    def __init__(self, serve: Serve, control: Control, home: str, *, read_peer: peers.PeerReader | None = None):
        self._serve_connection = serve
        self._control = control
        self._home = home
        self._read_peer = read_peer
        """How a client's uid is read (None: this system's way, ``platform.peers``)."""

    async def open(self, path: str) -> asyncio.Server:
        """Listen on ``path`` (the caller made its folder private and removed a dead host's socket), mode ``0600``."""
        server = await unix_sockets.start_server(self.accept, path, limit=1024 * 1024)
        os.chmod(path, 0o600)
        return server

    def refusal(self, sock: peers.PeerSocket | None) -> str | None:
        """Why a connection on ``sock`` is not let in (its process is not this user's), or None."""
        if sock is None:
            return "a connection without a socket"
        return peer_problem(sock, "the connecting process", self._read_peer)

    async def accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._serve(reader, writer)
        except Exception:
            _log.exception("a connection to the session host failed")
        finally:
            writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        problem = self.refusal(writer.get_extra_info("socket"))
        if problem is not None:
            _log.warning("refused a connection from another user", reason=problem)
            return
        with anyio.move_on_after(HELLO_TIMEOUT_S):
            line = await reader.readline()
        if not line or len(line) > MAX_HELLO_BYTES:
            return
        hello = decode_line(line)
        if hello is None:
            _log.warning("a connection did not start with a hello line")
            return
        if CONTROL_KEY in hello:
            writer.write(encode_line(await self._control(str(hello[CONTROL_KEY]))))
            await writer.drain()
            return
        if HELLO_KEY not in hello:
            return
        version = hello.get("version")
        if version != __version__:
            error = (
                f"a hermes-acp session host of version {__version__} serves {self._home}, and this front door"
                f" is version {version}: stop the old host with `hermes-acp host stop` (it settles running turns"
                " first) or let it exit when idle, then start the editor's agent again"
            )
            writer.write(encode_line({"ok": False, "version": __version__, "error": error}))
            await writer.drain()
            return
        env = hello.get("env")
        client_env = {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}
        writer.write(encode_line({"ok": True, "version": __version__}))
        await writer.drain()
        connection = Connection(
            LineReader(reader), LineWriter(writer), client_env, cancel_on_leave=False, name="socket"
        )
        async with anyio.create_task_group() as group:
            group.start_soon(connection.dispatcher.run, name="host connection dispatcher")
            await self._serve_connection(connection)
