"""Where a session host lives: its private runtime directory, socket, lock and record, who may be at the other end
of its socket, and the hello lines.

One host serves one ``$HERMES_ACP_HOME``. Its directory is private: ``$XDG_RUNTIME_DIR/hermes-acp/<digest of the
home>`` when ``XDG_RUNTIME_DIR`` is set, else ``$HERMES_ACP_HOME/run``, or, when a socket path there would be longer
than this system allows (107 bytes on Linux, 103 on macOS), ``hermes-acp-<digest>`` in ``$TMPDIR`` or ``/tmp``
(``HostPaths.note`` says so; the host logs it, ``host status`` and ``--check`` print it). In it: ``host.sock`` (the
Unix socket front doors and ``host status``/``stop`` connect to), ``host.lock`` (held by the running host, so two
never serve one home) and ``host.json`` (its pid and version). Both ends trust the socket only when the directory is
a real directory (not a link), the user's own and ``0700`` (``private_dir_problem``), and the process at the other
end is the user's (``peer_problem``, through ``platform.peers``): the host checks its clients, the front door its
host, before either sends a byte.

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

from hermes_acp.platform import peers, system

__all__ = [
    "CONTROL_KEY",
    "HELLO_KEY",
    "MAX_HELLO_BYTES",
    "HostPaths",
    "decode_line",
    "encode_line",
    "host_paths",
    "peer_problem",
    "private_dir",
    "private_dir_problem",
    "replace_file",
    "untrusted_host",
]

HELLO_KEY = "hermes-acp-front-door"
CONTROL_KEY = "hermes-acp-control"
MAX_HELLO_BYTES = 4 * 1024 * 1024
"""The longest first line accepted (a hello carries the editor's environment)."""
SOCKET_NAME = "host.sock"


class HostPaths:
    def __init__(self, home: str, directory: str, note: str | None = None):
        self.home = home
        self.directory = directory
        self.socket = os.path.join(directory, SOCKET_NAME)
        self.lock = os.path.join(directory, "host.lock")
        self.record = os.path.join(directory, "host.json")
        self.note = note
        """Why the folder is not the usual one (a socket path there would be too long), in words; None when it is."""


def host_paths(env: Mapping[str, str], *, max_socket_bytes: int | None = None) -> HostPaths:
    """The host's paths for the home ``env`` names (the directory is not created here). The folder is
    ``$XDG_RUNTIME_DIR/hermes-acp/<digest of the home>`` or ``$HERMES_ACP_HOME/run``; when the socket's path there
    is longer than a Unix socket allows (``max_socket_bytes``, this system's by default: 107 bytes on Linux, 103 on
    macOS), a short folder ``hermes-acp-<digest>`` in ``$TMPDIR`` or ``/tmp`` instead, and ``note`` says so. Every
    process that reads the same environment (front doors, the host, ``host status``) finds the same folder."""
    import hashlib

    raw = env.get("HERMES_ACP_HOME")
    home = os.path.abspath(os.path.expanduser(raw) if raw else os.path.join(os.path.expanduser("~"), ".hermes-acp"))
    limit = system.max_socket_path_bytes() if max_socket_bytes is None else max_socket_bytes
    digest = hashlib.sha256(home.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        usual = os.path.join(runtime, "hermes-acp", digest)
    else:
        usual = os.path.join(home, "run")
    if _socket_bytes(usual) <= limit:
        return HostPaths(home, usual)
    tmpdir = env.get("TMPDIR")
    bases = [tmpdir] if tmpdir and os.path.isabs(tmpdir) else []
    for base in [*bases, "/tmp"]:
        short = os.path.join(base, f"hermes-acp-{digest}")
        if _socket_bytes(short) <= limit:
            note = (
                f"the session host's socket is in {short}: in {usual} its path would be {_socket_bytes(usual)} bytes,"
                f" longer than a Unix socket allows here ({limit})"
            )
            return HostPaths(home, short, note)
    raise OSError(
        f"the host's socket path {os.path.join(usual, SOCKET_NAME)!r} is longer than a Unix socket allows ({limit}"
        " bytes), and so is one in $TMPDIR and /tmp; set XDG_RUNTIME_DIR to a short directory"
    )


def _socket_bytes(directory: str) -> int:
    """The length ``bind`` sees: the path as given (not its real path), encoded as the file system's."""
    return len(os.fsencode(os.path.join(directory, SOCKET_NAME)))


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
    if not peers.owned_by_me(info):
        return (
            f"the session host's folder {path} belongs to another user (uid {info.st_uid}, you are uid"
            f" {peers.current_uid()}); anyone who can write where it is can pretend to be the host: set XDG_RUNTIME_DIR"
            " to a folder only you can write"
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


def peer_problem(sock: peers.PeerSocket, who: str, read_peer: peers.PeerReader | None = None) -> str | None:
    """Why the process at the other end of ``sock`` (``who``, in words) is not to be trusted, or None when it is this
    user's. ``read_peer`` reads its uid (this system's way by default: ``platform.peers``); a peer this system cannot
    name, or whose credentials do not read, is refused too."""
    reader = peers.peer_reader() if read_peer is None else read_peer
    try:
        uid = reader(sock)
    except OSError as exc:
        return f"{who}: its credentials could not be read ({exc})"
    me = peers.current_uid()
    if uid is None or me is None:
        return f"{who}: this system cannot tell which user it is"
    if uid != me:
        return f"{who} belongs to another user (uid {uid}, you are uid {me})"
    return None


def untrusted_host(paths: HostPaths, sock: peers.PeerSocket, read_peer: peers.PeerReader | None = None) -> str | None:
    """Why the host connected to on ``sock`` cannot be trusted with a byte (its folder, or the uid of the process
    listening), in words; None when it is the user's own."""
    problem = private_dir_problem(paths.directory)
    if problem is not None:
        return problem
    return peer_problem(sock, f"the process listening on {paths.socket}", read_peer)


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
