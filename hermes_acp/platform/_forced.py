"""Which portable paths a test run forces on a system that does not need them: ``HERMES_ACP_PORTABLE``.

A comma-separated list:

- ``tree``: psutil's process tree instead of the POSIX process group (what Windows uses);
- ``stdio``: the threaded stdio transport (a reader and a writer thread, what Windows uses), for the server's own
  stdin/stdout and the front doors' relays (``--shared`` and ``--connect``);
- ``refuse-shared``: shared mode refused as on Windows (``--shared`` and ``hermes-acp host``), so the refusal runs
  through the real process where shared mode works.

Read once per process. The lock has no such switch: one library serves every system. Knows nothing about what the
paths do.
"""

from __future__ import annotations

import functools
import os

__all__ = ["PORTABLE_ENV", "forced"]

PORTABLE_ENV = "HERMES_ACP_PORTABLE"


@functools.cache
def _forced() -> frozenset[str]:
    return frozenset(part.strip() for part in os.environ.get(PORTABLE_ENV, "").split(",") if part.strip())


def forced(path: str) -> bool:
    """Whether the portable ``path`` (``tree``, ``stdio``, ``refuse-shared``) is forced for this process."""
    return path in _forced()
