"""``hermes-acp host status`` and ``hermes-acp host stop``: ask the running session host over its socket.

Standard library only, like the front door. ``status`` prints what the host reports (pid, version, home,
connections, live sessions and which run a turn) as JSON and exits 0, or says that no host runs and exits 3.
``stop`` asks the host to shut down (running turns are cancelled and settled in the log, child processes stopped),
waits until its socket is gone, and exits 0; with no host running it says so and exits 0. Like the front door, it
asks only a host whose folder and process are the user's own (``paths.untrusted_host``), and says why otherwise.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from hermes_acp.platform import unix_sockets

from .paths import CONTROL_KEY, decode_line, encode_line, host_paths, untrusted_host

__all__ = ["NOT_RUNNING", "host_control", "request"]

NOT_RUNNING = 3
"""``host status``'s exit status when no host serves the home."""
STOP_WAIT_S = 10.0


def request(env: Mapping[str, str], command: str, *, timeout_s: float = 10.0) -> dict[str, Any] | None:
    """The host's answer to a control request; None when no host listens."""
    paths = host_paths(env)
    sock = unix_sockets.stream_socket()
    sock.settimeout(timeout_s)
    try:
        try:
            sock.connect(paths.socket)
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        problem = untrusted_host(paths, sock)
        if problem is not None:
            raise PermissionError(problem)
        sock.sendall(encode_line({CONTROL_KEY: command}))
        data = b""
        while b"\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        sock.close()
    return decode_line(data.split(b"\n", 1)[0]) if data else None


def host_control(
    command: str,
    out: Callable[[str], None],
    env: Mapping[str, str] | None = None,
    *,
    err: Callable[[str], None] | None = None,
) -> int:
    env = dict(os.environ) if env is None else env
    paths = host_paths(env)
    try:
        answer = request(env, command)
    except OSError as exc:
        (err or out)(f"hermes-acp: {exc}")
        return 1
    if paths.note is not None and err is not None:
        err(f"hermes-acp: {paths.note}")
    if answer is None:
        out(f"no hermes-acp session host runs for {paths.home}")
        return NOT_RUNNING if command == "status" else 0
    if command == "stop":
        deadline = time.monotonic() + STOP_WAIT_S
        while os.path.exists(paths.record) and time.monotonic() < deadline:
            time.sleep(0.02)
        out(f"stopped the session host (pid {answer.get('pid')})")
        return 0
    out(json.dumps(answer, indent=2))
    return 0 if answer.get("ok") else 1
