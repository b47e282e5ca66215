"""Advisory file locks on an open file: exclusive, never waited for in the kernel, dropped when the process dies.

portalocker does it on every system (``flock`` on POSIX, ``LockFileEx`` or ``msvcrt.locking`` on Windows), on a
descriptor the caller opened itself: the caller keeps reaching its lock file without following a link
(``hermes_acp.anchored``), which a library that opens the path itself would not (filelock). It is imported on the
first lock, not at start-up. ``try_lock`` tries once; ``held`` waits, bounded, by polling. Knows nothing about what a
lock guards.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = ["held", "try_lock", "unlock"]

_POLL_S = 0.005


def try_lock(fd: int) -> bool:
    """Take the exclusive lock on ``fd`` if nobody holds it (True), else False at once."""
    import portalocker

    try:
        portalocker.lock(fd, portalocker.LOCK_EX | portalocker.LOCK_NB)
    except portalocker.exceptions.LockException:
        return False
    return True


def unlock(fd: int) -> None:
    import portalocker

    with contextlib.suppress(portalocker.exceptions.LockException, OSError):
        portalocker.unlock(fd)


@contextlib.contextmanager
def held(fd: int, *, wait_s: float) -> Iterator[bool]:
    """Hold the lock on ``fd`` (True), or give up after ``wait_s`` seconds (False); released on exit."""
    import time

    deadline = time.monotonic() + wait_s
    pause = threading.Event()
    while not try_lock(fd):
        if time.monotonic() >= deadline:
            yield False
            return
        pause.wait(_POLL_S)
    try:
        yield True
    finally:
        unlock(fd)
