"""The shared front door: what an editor starts in ``[host] mode = "shared"`` (or with ``--shared``): a thin relay
to the session host.

It connects to the host's Unix socket (starting the host when none runs), sends one hello line (its version, and
the environment the editor gave it, which applies to the sessions this connection opens), reads the host's answer,
then carries bytes both ways unchanged until either side closes: the editor's stdin to the socket, the socket to the
editor's stdout. When the editor goes (stdin's EOF, or this process killed like an SSH link that drops), the host
sees the connection leave, and the sessions go on there.

The hello carries the editor's keys, so nothing is sent before the front door knows that the host is the user's own:
the socket's folder must be a real directory (not a link), the user's and ``0700``, and the process listening on
the socket must be the user's (its uid, ``paths.peer_uid``). Otherwise it refuses, naming the folder and what is
wrong, and sends nothing; it does not start a host in such a folder either.

The host it starts belongs to nobody: an intermediate child starts it in a session and process group of its own
and exits at once, so the host is re-parented (to init or a subreaper), stdin and stdout on ``/dev/null``, stderr
to ``logs/host-stderr.log``. A client that ends its agent's whole process tree or group (acpx does, when its queue
owner exits) ends only the front door; the host and its turns go on.

A host of another version does not take the connection: the front door answers the editor's first request with
an error that says which versions differ and how to stop the old host (``hermes-acp host stop``), says so on
stderr, and exits 1. It never attaches across versions.

It must start in milliseconds, so it imports only the standard library and ``paths`` (never the server: no
asyncio, no pydantic, nothing of ``protocol`` or ``sessions``); ``subprocess`` only when it starts a host.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import socket
import sys
import time
from collections.abc import Mapping

from hermes_acp.version import __version__

from .paths import HELLO_KEY, HostPaths, decode_line, encode_line, host_paths, private_dir_problem, untrusted_host

__all__ = ["START_TIMEOUT_S", "run_front_door"]

START_TIMEOUT_S = 30.0
"""How long the front door waits for a host it started to listen."""
HELLO_TIMEOUT_S = 30.0
"""How long it waits for the host's answer to its hello."""
_CHUNK = 1 << 16


def run_front_door(env: Mapping[str, str] | None = None) -> int:
    """Relay stdin/stdout to the host until either side closes; the exit status."""
    env = dict(os.environ) if env is None else dict(env)
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
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(paths.socket)
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.ENOENT, errno.ECONNREFUSED):
            return None
        raise
    return sock


def _start_host(paths: HostPaths, env: Mapping[str, str]) -> socket.socket:
    """Start ``hermes-acp host`` detached (``_spawn_detached``: it outlives this process and its tree), then connect
    to it."""
    logs = os.path.join(paths.home, "logs")
    os.makedirs(logs, mode=0o700, exist_ok=True)
    log = os.path.join(logs, "host-stderr.log")
    _spawn_detached([sys.executable, "-m", "hermes_acp", "host", "--detached"], env, log)
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


def _spawn_detached(argv: list[str], env: Mapping[str, str], log: str) -> None:
    """Run ``argv`` as nobody's child: a forked intermediate starts it in a new session (``setsid``: its own process
    group, no terminal) and exits at once, so it is re-parented and no tree or group of ours holds it. Raises
    ``OSError`` with the reason when it could not be started."""
    import subprocess

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the intermediate: nothing of the parent's may run here (no finalizers, no buffered output)
        code = 0
        try:
            os.close(read_end)
            with open(log, "ab") as stderr:
                subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                    env=dict(env),
                    cwd="/",
                    start_new_session=True,
                )
        except BaseException as exc:
            code = 1
            with contextlib.suppress(OSError):
                os.write(write_end, str(exc).encode("utf-8", "replace")[:4096])
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        os.waitpid(pid, 0)
        failure = os.read(read_end, 4096)
    finally:
        os.close(read_end)
    if failure:
        raise OSError(f"could not start the session host ({' '.join(argv)}): {failure.decode('utf-8', 'replace')}")


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
    """stdin → socket and socket → stdout, until the host closes (the editor's EOF is passed on as a half-close)."""
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


def _half_close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _refuse(message: str) -> int:
    """Say why on stderr and answer the editor's first request with it, so the editor shows it too."""
    sys.stderr.write(f"hermes-acp: {message}\n")
    sys.stderr.flush()
    ready, _, _ = select.select([0], [], [], 10.0)
    if ready:
        first = b""
        while not first.endswith(b"\n"):
            chunk = os.read(0, _CHUNK)
            if not chunk:
                break
            first += chunk
        request = decode_line(first.split(b"\n", 1)[0])
        if request is not None and "id" in request and "method" in request:
            error = {"code": -32603, "message": message}
            reply = json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}) + "\n"
            with contextlib.suppress(OSError):
                _write_all(1, reply.encode())
    return 1
