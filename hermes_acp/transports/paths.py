"""Where a session host lives: its private runtime directory, socket, lock and record, who may be at the other end
of its socket, and the hello lines.

One host serves one ``$HERMES_ACP_HOME``. Its directory is private: ``$XDG_RUNTIME_DIR/hermes-acp/<digest of the
home>`` when ``XDG_RUNTIME_DIR`` is set, else ``$HERMES_ACP_HOME/run``. In it: ``host.sock`` (the Unix socket front
doors and ``host status``/``stop`` connect to), ``host.lock`` (held by the running host, so two never serve one home)
and ``host.json`` (its pid and version). Both ends trust the socket only when the directory is a real directory
(not a link), the user's own and ``0700`` (``private_dir_problem``), and the process at the other end is the user's
(``peer_uid``): the host checks its clients, the front door its host, before either sends a byte.

A connection starts with one line of JSON from the client: a front door's hello (its version, and the
environment the editor gave it) or a control request (``status``, ``stop``); the host answers with one line,
then (for a front door) ACP frames flow unchanged. Standard library only: the front door imports this.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import struct
import sys
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
    "peer_uid",
    "private_dir",
    "private_dir_problem",
    "replace_file",
    "untrusted_host",
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


def private_dir_problem(path: str) -> str | None:
    """What makes ``path`` unfit to hold the host's socket, in words (None when it is the user's own real ``0700``
    directory). A directory that does not exist is a problem too: the caller decides whether to create it."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return f"the session host's folder {path} does not exist"
    if stat.S_ISLNK(info.st_mode):
        return f"the session host's folder {path} is a symbolic link; it must be a real directory of yours"
    if not stat.S_ISDIR(info.st_mode):
        return f"the session host's folder {path} is not a directory"
    if info.st_uid != os.getuid():
        return (
            f"the session host's folder {path} belongs to another user (uid {info.st_uid}, you are uid {os.getuid()});"
            " anyone who can write where it is can pretend to be the host: set XDG_RUNTIME_DIR to a folder only you"
            " can write"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode != 0o700:
        return (
            f"the session host's folder {path} has mode {mode:04o}, not 0700 (others could reach the socket in it):"
            f" run `chmod 700 {path}`"
        )
    return None


def private_dir(path: str) -> None:
    """Create ``path`` (and its parents) as the user's own ``0700`` directory; ``PermissionError`` naming what is
    wrong when it exists and is not one (``private_dir_problem``)."""
    try:
        os.makedirs(path, mode=0o700)
    except FileExistsError:
        pass
    else:
        os.chmod(path, 0o700)  # whatever the umask took away: the check below wants exactly 0700
    problem = private_dir_problem(path)
    if problem is not None:
        raise PermissionError(problem)


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a connected Unix socket: for the host, its client's; for a client,
    the host's when it listened (``SO_PEERCRED`` on Linux, ``LOCAL_PEERCRED`` on macOS and the BSDs)."""
    if sys.platform == "linux":
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
    else:  # struct xucred { u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16]; } at SOL_LOCAL
        creds = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED, _XUCRED_SIZE)
        (uid,) = struct.unpack_from("=I", creds, 4)
    return int(uid)


_SOL_LOCAL = 0
_LOCAL_PEERCRED = 1
_XUCRED_SIZE = struct.calcsize("=IIh2x16I")


def untrusted_host(paths: HostPaths, sock: socket.socket) -> str | None:
    """Why the host connected to on ``sock`` cannot be trusted with a byte (its folder, or the uid of the process
    listening), in words; None when it is the user's own."""
    problem = private_dir_problem(paths.directory)
    if problem is not None:
        return problem
    uid = peer_uid(sock)
    if uid != os.getuid():
        return f"the process listening on {paths.socket} belongs to another user (uid {uid}, you are uid {os.getuid()})"
    return None


def replace_file(path: str, data: bytes, mode: int = 0o600) -> None:
    """Write ``path`` whole (``anchored.write_file``: a new file of ``mode`` beside it, fsynced, renamed over it, the
    folder synced), reached from its own folder without following a link: a reader sees the old content or the new
    one, never a part."""
    from pathlib import Path  # the host's and `host token`'s path only: the front door loads neither

    from hermes_acp import anchored

    target = Path(path)
    anchored.write_file(target.parent, target, data, new_mode=mode, keep_mode=False)


def encode_line(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode("utf-8", "surrogateescape") + b"\n"


def decode_line(line: bytes) -> dict[str, Any] | None:
    """A hello or control line, or None when it is not one."""
    try:
        message = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    return message if isinstance(message, dict) else None
