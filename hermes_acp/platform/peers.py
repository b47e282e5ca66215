"""Who is at the other end of a Unix socket, and who owns a file: the session host lets in only its own user.

- Linux: ``SO_PEERCRED`` (``struct ucred``: pid, uid, gid);
- macOS and the BSDs: ``LOCAL_PEERCRED`` (``struct xucred``: version, uid, the groups), which is what ``getpeereid``
  reads; the level is ``SOL_LOCAL`` (0);
- Windows: no Unix-socket peer credentials (shared mode is refused there: ``system.shared_mode_problem``) and no
  numeric owner; ``owned_by_me`` leaves it to the file's access list.

The parsers are pure and run on every system, so the macOS layout is checked on Linux against a recorded
``xucred``. A reply that is short, of another version or with an impossible group count is refused (``OSError``):
the caller refuses the connection. Knows nothing about the host.
"""

from __future__ import annotations

import os
import socket
import struct
import sys

__all__ = ["XUCRED", "current_uid", "is_root", "owned_by_me", "parse_ucred", "parse_xucred", "peer_uid"]

XUCRED = struct.Struct("=IIh2x16I")
"""``struct xucred`` (``<sys/ucred.h>``): ``u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16]``,
two bytes of padding after ``cr_ngroups``: 76 bytes."""
XUCRED_VERSION = 0
NGROUPS = 16
SOL_LOCAL = 0
"""``<sys/un.h>``: the level of ``LOCAL_PEERCRED``; Python does not export it."""
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


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of the Unix socket ``sock`` (None: this system cannot tell).
    Raises ``OSError`` when the system should tell and does not."""
    if sys.platform == "linux":
        return parse_ucred(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, UCRED.size))
    elif sys.platform == "win32":
        return None
    else:
        return parse_xucred(sock.getsockopt(SOL_LOCAL, socket.LOCAL_PEERCRED, XUCRED.size))[0]


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
