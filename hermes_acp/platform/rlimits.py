"""Per-process resource limits: the current hard ceilings, and the small launcher that sets limits and execs.

``hard_ceiling`` reads this process's hard limit for a resource (a child cannot be given more). ``launcher`` is the
argv prefix that sets ``RLIMIT_CPU`` (soft, then hard ``CPU_GRACE_S`` later), ``RLIMIT_FSIZE``, ``RLIMIT_DATA`` and
no core dumps by ``setrlimit`` and then becomes the command (``os.execv``), optionally in a session of its own
(``setsid``: an editor's terminal, whose keystrokes a command must not push into). macOS uses it in front of
``sandbox-exec`` (rlimits survive ``exec``); Linux uses ``prlimit`` (``exec.limits``). It never sets
``RLIMIT_NPROC``: outside a user namespace the kernel counts all of the user's processes against it, so a limit
would hit the user's desktop (the process-group watcher bounds processes there). The launcher is this module's
interpreter with ``-I -S`` (isolated, no site: some 10 ms) and the code below: nothing on ``PATH``, nothing the
command's environment could change. Knows nothing about sandboxes.
"""

from __future__ import annotations

import sys
from typing import Literal

__all__ = ["CPU_GRACE_S", "LAUNCHER_CODE", "Resource", "hard_ceiling", "launcher"]

CPU_GRACE_S = 10
"""Between SIGXCPU (the soft CPU limit) and SIGKILL (the hard one)."""
Resource = Literal["cpu", "data", "fsize", "nproc", "core"]

LAUNCHER_CODE = """\
import os, resource, sys
cpu, fsize, data, session = (int(a) for a in sys.argv[1:5])
def cap(which, soft, hard):
    _, top = resource.getrlimit(which)
    if top != resource.RLIM_INFINITY:
        soft, hard = min(soft, top), min(hard, top)
    resource.setrlimit(which, (soft, hard))
if cpu > 0: cap(resource.RLIMIT_CPU, cpu, cpu + GRACE)
if fsize > 0: cap(resource.RLIMIT_FSIZE, fsize, fsize)
if data > 0: cap(resource.RLIMIT_DATA, data, data)
cap(resource.RLIMIT_CORE, 0, 0)
if session: os.setsid()
os.execv(sys.argv[6], sys.argv[6:])
""".replace("GRACE", str(CPU_GRACE_S))
"""argv: cpu seconds, file bytes, data bytes, 1 for a new session, ``--``, the command (0: no limit)."""


def hard_ceiling(which: Resource) -> int | None:
    """This process's hard limit for ``which`` (None: unlimited, or a system without rlimits)."""
    if sys.platform == "win32":
        return None
    else:
        import resource

        number = {
            "cpu": resource.RLIMIT_CPU,
            "data": resource.RLIMIT_DATA,
            "fsize": resource.RLIMIT_FSIZE,
            "nproc": resource.RLIMIT_NPROC,
            "core": resource.RLIMIT_CORE,
        }[which]
        _soft, hard = resource.getrlimit(number)
        return None if hard == resource.RLIM_INFINITY else hard


def launcher(*, cpu_s: int, file_bytes: int, data_bytes: int, new_session: bool) -> list[str]:
    """The argv to put in front of a command (an absolute path) to start it under these limits (0: no limit)."""
    session = "1" if new_session else "0"
    return [
        sys.executable,
        "-I",
        "-S",
        "-c",
        LAUNCHER_CODE,
        str(cpu_s),
        str(file_bytes),
        str(data_bytes),
        session,
        "--",
    ]
