"""Who is at the other end of a Unix socket, and who owns a file: the session host lets in only its own user.

- Linux: ``SO_PEERCRED`` (``struct ucred``: pid, uid, gid);
- macOS and the BSDs: ``LOCAL_PEERCRED`` (``struct xucred``: version, uid, the groups), which is what ``getpeereid``
  reads; the level is ``SOL_LOCAL`` (0);
- Windows: no Unix-socket peer credentials (shared mode is refused there: ``system.shared_mode_problem``) and no
  numeric owner; ``owned_by_me`` leaves it to the file's access list.

The parsers are pure and the macOS reader asks ``getsockopt`` by number (``SOL_LOCAL``, ``LOCAL_PEERCRED``), so the
macOS path runs on Linux against a socket that answers a recorded ``xucred``; ``peer_reader`` picks this system's.
A reply that is short, of another version or with an impossible group count is refused (``OSError``): the caller
refuses the connection. Knows nothing about the host.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
from collections.abc import Callable
from typing import Protocol

__all__ = [
    "XUCRED",
    "PeerReader",
    "PeerSocket",
    "current_uid",
    "is_root",
    "no_peer_uid",
    "owned_by_me",
    "parse_ucred",
    "parse_xucred",
    "peer_reader",
    "peer_uid",
    "ucred_peer_uid",
    "xucred_peer_uid",
]

XUCRED = struct.Struct("=IIh2x16I")
"""``struct xucred`` (``<sys/ucred.h>``): ``u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16]``,
two bytes of padding after ``cr_ngroups``: 76 bytes."""
XUCRED_VERSION = 0
NGROUPS = 16
SOL_LOCAL = 0
"""``<sys/un.h>``: the level of ``LOCAL_PEERCRED``; Python does not export it."""
LOCAL_PEERCRED = 0x001
"""``<sys/un.h>`` (``socket.LOCAL_PEERCRED`` on macOS; a number here so the macOS reader runs on every system)."""
UCRED = struct.Struct("=3i")
"""``struct ucred`` (Linux): pid, uid, gid."""


def parse_xucred(raw: bytes) -> tuple[int, tuple[int, ...]]:
    """(uid, groups) from a ``LOCAL_PEERCRED`` reply."""
    if len(raw) < XUCRED.size:
        raise OSError(f"short xucred: {len(raw)} bytes, {XUCRED.size} expected")
    version, uid, ngroups, *groups = XUCRED.unpack(raw[: XUCRED.size])
    if version != XUCRED_VERSION or not 0 <= ngroups <= NGROUPS:
        raise OSError(f"unexpected xucred (version {version}, {ngroups} groups)")
    return uid, tuple(groups[:ngroups])


def parse_ucred(raw: bytes) -> int:
    """The uid from an ``SO_PEERCRED`` reply."""
    if len(raw) < UCRED.size:
        raise OSError(f"short ucred: {len(raw)} bytes, {UCRED.size} expected")
    _pid, uid, _gid = UCRED.unpack(raw[: UCRED.size])
    return int(uid)


class PeerSocket(Protocol):
    """What reading peer credentials needs of a connected socket (``socket.socket``, asyncio's transport socket)."""

    def getsockopt(self, level: int, optname: int, buflen: int, /) -> bytes: ...


PeerReader = Callable[[PeerSocket], "int | None"]
"""Who is at the other end of a socket: a uid, None where the system cannot tell; ``OSError`` when it should."""


def ucred_peer_uid(sock: PeerSocket) -> int:
    """Linux: ``getsockopt(SOL_SOCKET, SO_PEERCRED)`` (its number differs between Linux architectures)."""
    if sys.platform == "linux":
        return parse_ucred(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, UCRED.size))
    else:
        raise OSError("SO_PEERCRED is Linux's")


def xucred_peer_uid(sock: PeerSocket) -> int:
    """macOS and the BSDs: ``getsockopt(SOL_LOCAL, LOCAL_PEERCRED)``, what ``getpeereid(3)`` reads."""
    return parse_xucred(sock.getsockopt(SOL_LOCAL, LOCAL_PEERCRED, XUCRED.size))[0]


def no_peer_uid(_sock: PeerSocket) -> None:
    """Windows: no Unix-socket peer credentials."""


def peer_reader() -> PeerReader:
    """This system's way to read a Unix socket's peer."""
    if sys.platform == "linux":
        return ucred_peer_uid
    elif sys.platform == "win32":
        return no_peer_uid
    else:
        return xucred_peer_uid


def peer_uid(sock: PeerSocket) -> int | None:
    """The uid of the process at the other end of the Unix socket ``sock`` (None: this system cannot tell).
    Raises ``OSError`` when the system should tell and does not."""
    return peer_reader()(sock)


def current_uid() -> int | None:
    """This process's uid (None on Windows)."""
    if sys.platform == "win32":
        return None
    else:
        return os.getuid()


def owned_by_me(st: os.stat_result) -> bool:
    """Whether a file (its ``stat``) belongs to this process's user; on Windows its access list decides: True."""
    uid = current_uid()
    return uid is None or st.st_uid == uid


def is_root() -> bool:
    """Whether this process runs as root (never on Windows)."""
    if sys.platform == "win32":
        return False
    else:
        return os.geteuid() == 0
