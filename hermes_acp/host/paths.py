"""Where a session host lives: its private runtime directory, socket, lock and record, and the hello lines.

One host serves one ``$HERMES_ACP_HOME``. Its directory is private (``0700``, owned by the user):
``$XDG_RUNTIME_DIR/hermes-acp/<digest of the home>`` when ``XDG_RUNTIME_DIR`` is set, else
``$HERMES_ACP_HOME/run``. In it: ``host.sock`` (the Unix socket front doors and ``host status``/``stop`` connect
to), ``host.lock`` (held by the running host, so two never serve one home) and ``host.json`` (its pid and version).

A connection starts with one line of JSON from the client: a front door's hello (its version, and the
environment the editor gave it) or a control request (``status``, ``stop``); the host answers with one line,
then (for a front door) ACP frames flow unchanged. Standard library only: the front door imports this.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from typing import Any

__all__ = [
    "CONTROL_KEY",
    "HELLO_KEY",
    "MAX_HELLO_BYTES",
    "HostPaths",
    "decode_line",
    "encode_line",
    "host_paths",
    "private_dir",
]

HELLO_KEY = "hermes-acp-front-door"
CONTROL_KEY = "hermes-acp-control"
MAX_HELLO_BYTES = 4 * 1024 * 1024
"""The longest first line accepted (a hello carries the editor's environment)."""
MAX_SOCKET_PATH = 107
"""sun_path holds 108 bytes with its terminating NUL."""


class HostPaths:
    def __init__(self, home: str, directory: str):
        self.home = home
        self.directory = directory
        self.socket = os.path.join(directory, "host.sock")
        self.lock = os.path.join(directory, "host.lock")
        self.record = os.path.join(directory, "host.json")


def host_paths(env: Mapping[str, str]) -> HostPaths:
    """The host's paths for the home ``env`` names (the directory is not created here)."""
    raw = env.get("HERMES_ACP_HOME")
    home = os.path.abspath(os.path.expanduser(raw) if raw else os.path.join(os.path.expanduser("~"), ".hermes-acp"))
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        import hashlib

        digest = hashlib.sha256(home.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        directory = os.path.join(runtime, "hermes-acp", digest)
    else:
        directory = os.path.join(home, "run")
    paths = HostPaths(home, directory)
    if len(os.fsencode(paths.socket)) > MAX_SOCKET_PATH:
        raise OSError(
            f"the host's socket path {paths.socket!r} is longer than a Unix socket allows; set XDG_RUNTIME_DIR to a"
            " short directory"
        )
    return paths


def private_dir(path: str) -> None:
    """Create ``path`` (and its parents) as the user's own ``0700`` directory; refuse one another user owns, and
    tighten one of ours that others could enter."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise OSError(f"{path} is not a directory")
    if info.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to another user (uid {info.st_uid}); the host will not use it")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)


def encode_line(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode("utf-8", "surrogateescape") + b"\n"


def decode_line(line: bytes) -> dict[str, Any] | None:
    """A hello or control line, or None when it is not one."""
    try:
        message = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    return message if isinstance(message, dict) else None
