"""The file system under a path: free space, whether it is mounted read-only, and this process's file-size limit.

``shutil.disk_usage`` everywhere (the same number as ``statvfs``' ``f_bavail * f_frsize``); the read-only flag
where ``statvfs`` exists (None on Windows, where a write probe decides); ``RLIMIT_FSIZE`` on POSIX. Blocking; knows
nothing about the store.
"""

from __future__ import annotations

import os
import shutil
import sys

__all__ = ["file_size_limit", "free_bytes", "mounted_read_only"]


def free_bytes(path: str | os.PathLike[str]) -> int:
    """Bytes an unprivileged process may still write on the file system holding ``path``."""
    return shutil.disk_usage(path).free


def mounted_read_only(path: str | os.PathLike[str]) -> bool | None:
    """Whether the file system holding ``path`` is mounted read-only (None: this system does not say)."""
    if sys.platform == "win32":
        return None
    else:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)


def file_size_limit() -> int | None:
    """This process's ``RLIMIT_FSIZE`` in bytes, None when unlimited (or on Windows)."""
    if sys.platform == "win32":
        return None
    else:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        return None if soft == resource.RLIM_INFINITY else soft
