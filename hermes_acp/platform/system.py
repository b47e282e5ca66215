"""Which system this is, and what that decides: the sandbox backend, shared mode, the longest Unix socket path and
the variables every child needs. Worked out once per process.

- ``linux``: bubblewrap; ``wsl``: Linux under WSL2 (the same: bubblewrap, Linux limits), said in ``--check``;
- ``darwin``: Seatbelt (``/usr/bin/sandbox-exec``, by absolute path), ``setrlimit`` in a launcher and a
  process-group watcher;
- ``win32``: no sandbox yet (every command asks, in every mode), PowerShell, psutil's process tree, no shared mode.

Knows nothing about how a sandbox is built (``exec.sandbox``) or probed.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Literal

from ._forced import forced

__all__ = [
    "SANDBOX_EXEC",
    "SHARED_MODE_REFUSAL",
    "SandboxKind",
    "SystemName",
    "child_base_names",
    "max_socket_path_bytes",
    "sandbox_kind",
    "shared_mode_problem",
    "system_name",
]

SystemName = Literal["linux", "wsl", "darwin", "win32"]
SandboxKind = Literal["bwrap", "seatbelt", "none"]
SANDBOX_EXEC = "/usr/bin/sandbox-exec"
SHARED_MODE_REFUSAL = "shared mode needs macOS or Linux for now"

WINDOWS_CHILD_NAMES: tuple[str, ...] = (
    "SYSTEMROOT",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "PROGRAMFILES(X86)",
    "PROGRAMW6432",
    "COMMONPROGRAMFILES",
    "SYSTEMDRIVE",
    "USERNAME",
    "PROCESSOR_ARCHITECTURE",
    "NUMBER_OF_PROCESSORS",
    "OS",
    "PSMODULEPATH",
)
"""What Windows programs need to start at all (Winsock needs ``SYSTEMROOT``; ``npx.cmd`` is found through
``PATHEXT``; temporary files through ``TEMP``/``TMP``; npm, pip and uv caches under ``APPDATA``/``LOCALAPPDATA``)."""


@functools.cache
def system_name() -> SystemName:
    if sys.platform == "win32":
        return "win32"
    elif sys.platform == "darwin":
        return "darwin"
    else:
        return "wsl" if _wsl() else "linux"


def _wsl() -> bool:
    """Linux under WSL2 (WSL1 has no user namespaces: the bwrap probe says why it fails there)."""
    if os.path.exists("/proc/sys/fs/binfmt_misc/WSLInterop"):
        return True
    try:
        with open("/proc/sys/kernel/osrelease", encoding="ascii", errors="replace") as handle:
            return "microsoft" in handle.read().lower()
    except OSError:
        return False


def sandbox_kind(name: SystemName | None = None) -> tuple[SandboxKind, str | None]:
    """The sandbox backend of this system (or of ``name``) and, for ``none``, why there is none."""
    match name or system_name():
        case "linux" | "wsl":
            return "bwrap", None
        case "darwin":
            return "seatbelt", None
        case _:
            return "none", "there is no sandbox for Windows yet"


def shared_mode_problem(name: SystemName | None = None) -> str | None:
    """Why ``--shared`` and ``hermes-acp host`` cannot run on this system (or on ``name``); None: they can. Windows'
    CPython has no Unix sockets, and a named pipe would need its own access list and peer check: refused for now
    (``HERMES_ACP_PORTABLE=refuse-shared`` forces the refusal here, for tests)."""
    if name is None and forced("refuse-shared"):
        return SHARED_MODE_REFUSAL
    return SHARED_MODE_REFUSAL if (name or system_name()) == "win32" else None


def max_socket_path_bytes(name: SystemName | None = None) -> int:
    """The longest path ``bind`` takes for a Unix socket on this system (or on ``name``): ``sun_path`` less its NUL
    (108 on Linux, 104 on macOS)."""
    return 107 if (name or system_name()) in ("linux", "wsl") else 103


def child_base_names() -> tuple[str, ...]:
    """What every child gets on top of the allow-list here, when set (Windows' own variables; nothing on POSIX)."""
    return WINDOWS_CHILD_NAMES if system_name() == "win32" else ()


def kernel_release() -> str:
    """``uname -r`` (empty on Windows)."""
    if sys.platform == "win32":
        return ""
    else:
        return os.uname().release
