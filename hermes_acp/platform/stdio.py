"""The server's own stdin and stdout: which transport reads and writes them, and how stdout is kept for the protocol.

- ``threaded()``: whether stdin and stdout go through a reader and a writer thread (``transports.stdio_threads``)
  instead of the event loop's pipe transports. Windows needs the threads: its event loop (Proactor) can only watch
  overlapped handles, and an inherited stdin pipe is not one (the official MCP Python SDK reads stdio in threads
  there too). Linux and macOS use the pipe transports unless ``HERMES_ACP_PORTABLE=stdio`` forces the threads, so
  that their code runs in every CI.
- ``claim_stdout()``: a private duplicate of stdout for the protocol, and file descriptor 1 pointed at stderr, so a
  stray print (ours, a library's, a child's) cannot corrupt the channel. On Windows a child inherits the Win32
  standard handle, not the C runtime's descriptor 1, so the handle is pointed at stderr too (``SetStdHandle``),
  and both protocol descriptors are put in binary mode (no CRLF translation).
- ``pump_stdin(sock)``: the front doors' threaded relay (where ``threaded()``): stdin's bytes copied into a socket
  by a daemon thread, its end passed on as the socket's half-close. The shared front door pumps into the host's
  socket; ``--connect`` into a socket pair whose other end its ``select`` watches (on Windows ``select`` takes
  only sockets).

Knows nothing about JSON-RPC or the event loop.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys

from ._forced import forced

__all__ = ["claim_stdout", "pump_stdin", "threaded"]

_CHUNK = 1 << 16


def threaded() -> bool:
    """Whether stdio (and the front door's relay) runs through threads rather than the event loop's pipes."""
    if sys.platform == "win32":
        return True
    else:
        return forced("stdio")


def claim_stdout() -> int:
    """Keep stdout for the protocol: returns a private duplicate of it; descriptor 1 (and, on Windows, the standard
    output handle) now writes to stderr."""
    out, err = sys.__stdout__, sys.__stderr__
    stdout_fd = out.fileno() if out is not None else 1
    stderr_fd = err.fileno() if err is not None else 2
    protocol_fd = os.dup(stdout_fd)
    os.dup2(stderr_fd, stdout_fd)
    if sys.platform == "win32":
        import ctypes
        import msvcrt

        std_output_handle = -11
        for fd in (0, protocol_fd):
            with contextlib.suppress(OSError):  # no stdin at all: nothing to translate
                msvcrt.setmode(fd, os.O_BINARY)
        ctypes.windll.kernel32.SetStdHandle(std_output_handle, msvcrt.get_osfhandle(stdout_fd))
    return protocol_fd


def pump_stdin(sock: socket.socket, fd: int = 0) -> None:
    """Copy ``fd`` (stdin) into ``sock`` in a daemon thread until its end, a failed read or a failed send, then
    half-close ``sock`` (the reader on its other side sees the end). The thread is never joined: a read blocked on
    stdin cannot be interrupted on Windows, and a daemon thread does not hold the process's exit."""
    import threading

    def pump() -> None:
        try:
            while data := os.read(fd, _CHUNK):
                sock.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)

    threading.Thread(target=pump, name="hermes-acp stdin pump", daemon=True).start()
