"""The shared front door: what an editor starts in ``[host] mode = "shared"`` (or with ``--shared``): a thin relay
to the session host.

It connects to the host's Unix socket (starting the host when none runs), sends one hello line (its version, and
the environment the editor gave it, which applies to the sessions this connection opens), reads the host's answer,
then carries bytes both ways unchanged until either side closes: the editor's stdin to the socket, the socket to the
editor's stdout. When the editor goes (stdin's EOF, or this process killed like an SSH link that drops), the host
sees the connection leave, and the sessions go on there.

The hello carries the editor's keys, so nothing is sent before the front door knows that the host is the user's own:
the socket's folder must be a real directory (not a link), the user's and ``0700``, and the process listening on
the socket must be the user's (its uid, ``paths.peer_problem``). Otherwise it refuses, naming the folder and what is
wrong, and sends nothing; it does not start a host in such a folder either.

The host it starts belongs to nobody (``platform.processes.spawn_detached``: an intermediate child starts it in a
session and process group of its own and exits at once, so the host is re-parented to init or a subreaper), stdin
and stdout on ``/dev/null``, stderr to ``logs/host-stderr.log``. A client that ends its agent's whole process tree
or group (acpx does, when its queue owner exits) ends only the front door; the host and its turns go on.

A host of another version does not take the connection: the front door answers the editor's first request with
an error that says which versions differ and how to stop the old host (``hermes-acp host stop``), says so on
stderr, and exits 1. It never attaches across versions.

Where shared mode cannot run (Windows, ``platform.system.shared_mode_problem``) it refuses the same way, exit status
``UNSUPPORTED`` (2): "shared mode needs macOS or Linux for now". The relay is ``select`` over the editor's pipe and
the socket, or two threads where the platform's stdio is threaded (``platform.stdio``).

It must start in milliseconds, so it imports only the standard library, ``paths`` and the platform seam's small
modules (never the server: no asyncio, no pydantic, nothing of ``protocol`` or ``sessions``); ``subprocess`` only
when it starts a host.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import sys
import time
from collections.abc import Mapping

from hermes_acp.platform import stdio, system, unix_sockets
from hermes_acp.version import __version__

from .paths import (
    HELLO_KEY,
    MAX_HELLO_BYTES,
    HostPaths,
    decode_line,
    encode_line,
    host_paths,
    private_dir_problem,
    untrusted_host,
)

__all__ = ["START_TIMEOUT_S", "run_front_door"]

START_TIMEOUT_S = 30.0
"""How long the front door waits for a host it started to listen."""
HELLO_TIMEOUT_S = 30.0
"""How long it waits for the host's answer to its hello."""
REFUSAL_WAIT_S = 10.0
"""How long a refusing front door waits for the editor's first request, to answer it with the reason."""
UNSUPPORTED = 2
"""The exit status where shared mode cannot run on this system (``platform.system.shared_mode_problem``)."""
_CHUNK = 1 << 16


def run_front_door(env: Mapping[str, str] | None = None) -> int:
    """Relay stdin/stdout to the host until either side closes; the exit status."""
    env = dict(os.environ) if env is None else dict(env)
    unsupported = system.shared_mode_problem()
    if unsupported is not None:
        return _refuse(f"--shared: {unsupported}", status=UNSUPPORTED)
    try:
        paths = host_paths(env)
        sock = _connect(paths)
        if sock is None:
            _refuse_unsafe_folder(paths)
            sock = _start_host(paths, env)
        problem = untrusted_host(paths, sock)
        if problem is not None:
            sock.close()
            raise _Untrusted(problem)
        sock.sendall(encode_line({HELLO_KEY: 1, "version": __version__, "env": env, "pid": os.getpid()}))
        reply, rest = _read_line(sock)
    except _Untrusted as exc:
        return _refuse(f"hermes-acp will not talk to its session host: {exc}")
    except OSError as exc:
        return _refuse(f"hermes-acp could not reach its session host: {exc}")
    answer = decode_line(reply) if reply else None
    if answer is None:
        return _refuse("hermes-acp's session host closed the connection without answering")
    if answer.get("ok") is not True:
        return _refuse(str(answer.get("error") or "the session host refused the connection"))
    if rest:
        _write_all(1, rest)
    _relay(sock)
    return 0


class _Untrusted(Exception):
    """The socket's folder or the process behind it is not the user's own: nothing may be sent."""


def _refuse_unsafe_folder(paths: HostPaths) -> None:
    """Before starting a host: a folder that exists must be fit for it (a missing one the host creates)."""
    if os.path.lexists(paths.directory):
        problem = private_dir_problem(paths.directory)
        if problem is not None:
            raise _Untrusted(problem)


def _connect(paths: HostPaths) -> socket.socket | None:
    sock = unix_sockets.stream_socket()
    try:
        sock.connect(paths.socket)
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.ENOENT, errno.ECONNREFUSED):
            return None
        raise
    return sock


def _start_host(paths: HostPaths, env: Mapping[str, str]) -> socket.socket:
    """Start ``hermes-acp host`` detached (``platform.processes.spawn_detached``: it outlives this process and its
    tree), then connect to it."""
    from hermes_acp.platform.processes import spawn_detached

    logs = os.path.join(paths.home, "logs")
    os.makedirs(logs, mode=0o700, exist_ok=True)
    log = os.path.join(logs, "host-stderr.log")
    argv = [sys.executable, "-m", "hermes_acp", "host", "--detached"]
    try:
        spawn_detached(argv, env, log)
    except OSError as exc:
        raise OSError(f"could not start the session host: {exc}") from None
    deadline = time.monotonic() + START_TIMEOUT_S
    delay = 0.002
    while time.monotonic() < deadline:
        sock = _connect(paths)
        if sock is not None:
            return sock
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    raise OSError(
        f"the session host did not start listening on {paths.socket} within {START_TIMEOUT_S:g} s (its errors: {log})"
    )


def _read_line(sock: socket.socket) -> tuple[bytes, bytes]:
    """The host's one-line answer, and whatever came after it."""
    sock.settimeout(HELLO_TIMEOUT_S)
    data = b""
    while b"\n" not in data:
        chunk = sock.recv(_CHUNK)
        if not chunk:
            return b"", b""
        data += chunk
    sock.settimeout(None)
    line, _, rest = data.partition(b"\n")
    return line, rest


def _relay(sock: socket.socket) -> None:
    """stdin → socket and socket → stdout, until the host closes (the editor's EOF is passed on as a half-close):
    ``select`` over the pipe and the socket, or two threads where the standard handles cannot be selected
    (``platform.stdio.threaded``: Windows, and ``HERMES_ACP_PORTABLE=stdio``)."""
    if stdio.threaded():
        _relay_threads(sock)
    else:
        _relay_select(sock)


def _relay_select(sock: socket.socket) -> None:
    import select

    stdin, stdout, remote = 0, 1, sock.fileno()
    reading = [stdin, remote]
    while remote in reading:
        ready, _, _ = select.select(reading, [], [])
        for fd in ready:
            try:
                data = os.read(fd, _CHUNK) if fd == stdin else sock.recv(_CHUNK)
            except OSError:
                data = b""
            if fd == stdin:
                if not data:
                    reading.remove(stdin)
                    _half_close(sock)
                    continue
                try:
                    sock.sendall(data)
                except OSError:
                    return
            else:
                if not data:
                    return
                try:
                    _write_all(stdout, data)
                except OSError:
                    return  # the editor closed our stdout: leaving, like its EOF


def _relay_threads(sock: socket.socket) -> None:
    """The editor's bytes go up in a daemon thread (``stdio.pump_stdin``: a read of stdin cannot be interrupted);
    the host's come down in this one, which returns when the host closes or the editor stops reading."""
    stdio.pump_stdin(sock)
    while True:
        try:
            data = sock.recv(_CHUNK)
        except OSError:
            return
        if not data:
            return
        try:
            _write_all(1, data)
        except OSError:
            return


def _half_close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _refuse(message: str, *, status: int = 1) -> int:
    """Say why on stderr and answer the editor's first request with it, so the editor shows it too; ``status``."""
    sys.stderr.write(f"hermes-acp: {message}\n")
    sys.stderr.flush()
    request = decode_line(_first_line(REFUSAL_WAIT_S))
    if request is not None and "id" in request and "method" in request:
        error = {"code": -32603, "message": message}
        reply = json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}) + "\n"
        with contextlib.suppress(OSError):
            _write_all(1, reply.encode())
    return status


def _first_line(wait_s: float) -> bytes:
    """The editor's first line on stdin (at most ``MAX_HELLO_BYTES``), or what came of it within ``wait_s``. Read
    in a daemon thread, which works on every system's stdin (a pipe cannot be selected on Windows) and is left
    behind if the editor sends nothing."""
    import threading

    got: list[bytes] = []
    done = threading.Event()

    def read() -> None:
        first = b""
        try:
            while b"\n" not in first and len(first) < MAX_HELLO_BYTES:
                chunk = os.read(0, _CHUNK)
                if not chunk:
                    break
                first += chunk
        except OSError:
            pass
        got.append(first)
        done.set()

    threading.Thread(target=read, name="hermes-acp first line", daemon=True).start()
    done.wait(wait_s)
    return got[0].split(b"\n", 1)[0] if got else b""
