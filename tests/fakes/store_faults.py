"""Real ways for a session store to start failing under a running agent, for tests of what the agent does then.

- ``limit_file_size(pid, size)``: the process's ``RLIMIT_FSIZE`` (what ``prlimit --pid PID --fsize=SIZE`` sets).
  A write past ``size`` bytes of any file fails (EFBIG; Python ignores SIGXFSZ), so SQLite cannot grow its
  write-ahead log, exactly as on a full disk. ``size=None`` lifts the limit again.
- ``immutable(*paths)``: the files made immutable (``chattr +i``) for the block. Writes through descriptors the
  agent already holds fail with EPERM, as they fail with EROFS on a file system the kernel remounted read-only; a
  read-only remount itself needs the files closed, which a live store never has. Needs CAP_LINUX_IMMUTABLE and a
  file system with the flag (ext4, xfs, btrfs): the test is skipped, saying so, where that is missing.
"""

from __future__ import annotations

import contextlib
import resource
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

__all__ = ["immutable", "limit_file_size"]


def limit_file_size(pid: int, size: int | None) -> None:
    _soft, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY if size is None else size, hard))


@contextlib.asynccontextmanager
async def immutable(*paths: Path) -> AsyncIterator[None]:
    done: list[Path] = []
    try:
        for path in paths:
            result = await anyio.run_process(["chattr", "+i", str(path)], check=False)
            if result.returncode != 0:
                pytest.skip(f"chattr +i {path.name} failed: {result.stderr.decode(errors='replace').strip()}")
            done.append(path)
        yield
    finally:
        for path in done:
            await anyio.run_process(["chattr", "-i", str(path)])
