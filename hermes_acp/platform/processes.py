"""Process trees: how a child is started so that everything it starts can be found again, counted and ended.

Two backends, chosen once per process:

- **the process group** (Linux and macOS): the child starts a session of its own (``start_new_session``), so it and
  everything it starts share one process group; ``killpg`` reaches all of them at once, atomically, including
  children whose parent is gone. Whether a member is left is one syscall (``killpg(pgid, 0)``), then, while the
  group still exists, a look for a member that is not a zombie: ``/proc`` on Linux, psutil elsewhere.
- **psutil's tree** (Windows, and Linux under ``HERMES_ACP_PORTABLE=tree`` so that this code runs in every CI): the
  child starts in a new process group (``CREATE_NEW_PROCESS_GROUP``: the agent's Ctrl-C does not reach it) without a
  console window; its descendants are found through their parent ids and remembered (``refresh``, called while the
  child runs), so a descendant whose parent exits is still ended. What it misses: a descendant started and orphaned
  between two refreshes (a Job Object would catch it on Windows: NOTES.md says why not yet).

``tree_of(pid)`` gives the backend's ``ProcessTree`` for a child started with ``spawn_options()``. Blocking calls
(``alive``, ``count``, ``refresh``) belong in worker threads. Knows nothing about commands, sandboxes or MCP.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from . import signals
from ._forced import forced

if TYPE_CHECKING:
    import psutil

__all__ = [
    "GroupTree",
    "ProcessTree",
    "PsutilTree",
    "kill_pid",
    "resolve_command",
    "spawn_detached",
    "spawn_options",
    "tree_of",
    "uses_groups",
]


class ProcessTree(Protocol):
    """A started child and everything it started."""

    pid: int
    needs_refresh: bool
    """Whether ``refresh`` must be called while the child runs (descendants are found by their parents)."""

    def exists(self) -> bool:
        """Cheap: False once nothing of the tree is left, not even a zombie."""

    def alive(self) -> bool:
        """Whether a member that is not a zombie is left (blocking)."""

    def count(self) -> int:
        """How many members are alive (blocking)."""

    def refresh(self) -> None:
        """Remember the descendants there are now (blocking)."""

    def terminate(self) -> None:
        """Ask every member to stop (SIGTERM; Windows: end it)."""

    def kill(self) -> None:
        """End every member now."""


def uses_groups() -> bool:
    """Whether children are ended through their POSIX process group (else through psutil's tree)."""
    if sys.platform == "win32":
        return False
    else:
        return not forced("tree")


def spawn_options(*, detached: bool = False) -> dict[str, Any]:
    """What ``subprocess`` / ``anyio.open_process`` need to start a child this module can end as a whole; with
    ``detached``, a child that belongs to no tree, group or console of ours (the session host a front door starts)."""
    if sys.platform == "win32":
        if detached:  # no console, its own group, out of our Job Object where that allows it
            flags = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP
            return {"creationflags": flags | subprocess.CREATE_BREAKAWAY_FROM_JOB}
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.CREATE_NO_WINDOW}
    else:
        return {"start_new_session": True}


def spawn_detached(argv: list[str], env: Mapping[str, str], stderr_path: str) -> None:
    """Start ``argv`` as nobody's child, stdin and stdout on the null device, stderr appended to ``stderr_path``, in
    the root folder: it outlives this process, and a client that ends our whole tree or group does not reach it.
    POSIX: a forked intermediate starts it in a new session (``setsid``: its own process group, no terminal) and exits
    at once, so it is re-parented (to init or a subreaper). Windows: ``spawn_options(detached=True)``. Raises
    ``OSError`` with the reason when it could not be started."""
    root = os.path.abspath(os.sep)

    def start() -> None:
        with open(stderr_path, "ab") as stderr:
            subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                env=dict(env),
                cwd=root,
                **spawn_options(detached=True),
            )

    if sys.platform == "win32":
        start()
    else:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the intermediate: nothing of the parent's may run here (no finalizers, no buffered output)
            code = 0
            try:
                os.close(read_end)
                start()
            except BaseException as exc:
                code = 1
                with contextlib.suppress(OSError):
                    os.write(write_end, str(exc).encode("utf-8", "replace")[:4096])
            finally:
                os._exit(code)
        os.close(write_end)
        try:
            os.waitpid(pid, 0)
            failure = os.read(read_end, 4096)
        finally:
            os.close(read_end)
        if failure:
            raise OSError(f"could not start {' '.join(argv)}: {failure.decode('utf-8', 'replace')}")


def tree_of(pid: int) -> ProcessTree:
    """The tree of a child started with ``spawn_options()``."""
    return GroupTree(pid) if uses_groups() else PsutilTree(pid)


def resolve_command(command: str, path: str | None) -> str:
    """The program to start for ``command``: as it is on POSIX; on Windows found through ``PATH`` and ``PATHEXT``
    (``npx`` is ``npx.cmd``, which ``CreateProcess`` does not look for)."""
    if sys.platform == "win32":
        import shutil

        return shutil.which(command, path=path) or command
    else:
        return command


def kill_pid(pid: int) -> None:
    """End one process now; nothing when it is gone or not ours."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.kill(pid, signals.KILL)


class GroupTree:
    """The POSIX process group whose id is the child's pid (see the module docstring)."""

    needs_refresh = False

    def __init__(self, pid: int):
        self.pid = pid

    if sys.platform == "win32":

        def exists(self) -> bool:
            raise OSError("process groups are POSIX")

        def _send(self, number: int) -> None:
            raise OSError("process groups are POSIX")

    else:

        def exists(self) -> bool:
            try:
                os.killpg(self.pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                return True
            return True

        def _send(self, number: int) -> None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, number)

    def alive(self) -> bool:
        return self.exists() and self.count(stop_at=1) > 0

    def count(self, stop_at: int = 0) -> int:
        if sys.platform == "linux":
            return _group_members_proc(self.pid, stop_at)
        else:
            return _group_members_psutil(self.pid, stop_at)

    def refresh(self) -> None:
        return None

    def resident_bytes(self) -> int:
        """The resident memory of the group's members together (blocking; psutil)."""
        import psutil

        total = 0
        for process in psutil.process_iter():
            try:
                if _pgid(process.pid) == self.pid:
                    total += process.memory_info().rss
            except (psutil.Error, OSError):
                continue
        return total

    def terminate(self) -> None:
        self._send(signals.TERMINATE)

    def kill(self) -> None:
        self._send(signals.KILL)


def _group_members_proc(pgid: int, stop_at: int) -> int:
    """Members of the group that are not zombies, from ``/proc`` (all of them when ``/proc`` is missing: 1)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return 1
    wanted = str(pgid).encode()
    found = 0
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and fields[2] == wanted and fields[0] not in (b"Z", b"X"):
            found += 1
            if found == stop_at:
                break
    return found


def _pgid(pid: int) -> int:
    """The process group of ``pid`` (never equal to a group id on Windows, which has none)."""
    if sys.platform == "win32":
        return -1
    else:
        return os.getpgid(pid)


def _group_members_psutil(pgid: int, stop_at: int) -> int:
    import psutil

    found = 0
    for process in psutil.process_iter():
        try:
            if _pgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                found += 1
                if found == stop_at:
                    break
        except (psutil.Error, OSError):
            continue
    return found


class PsutilTree:
    """The child and the descendants psutil finds through their parents, remembered across refreshes."""

    needs_refresh = True

    def __init__(self, pid: int):
        import psutil

        self.pid = pid
        self._members: dict[int, psutil.Process] = {}
        with contextlib.suppress(psutil.Error):
            self._members[pid] = psutil.Process(pid)

    def _living(self) -> list[psutil.Process]:
        import psutil

        living = []
        for process in self._members.values():
            with contextlib.suppress(psutil.Error):
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    living.append(process)
        return living

    def refresh(self) -> None:
        import psutil

        for process in list(self._members.values()):
            try:
                children = process.children(recursive=True)
            except psutil.Error:
                continue
            for child in children:
                self._members.setdefault(child.pid, child)

    def exists(self) -> bool:
        return any(process.is_running() for process in self._members.values())

    def alive(self) -> bool:
        self.refresh()
        return bool(self._living())

    def count(self) -> int:
        self.refresh()
        return len(self._living())

    def terminate(self) -> None:
        import psutil

        self.refresh()
        for process in self._living():
            with contextlib.suppress(psutil.Error):
                process.terminate()

    def kill(self) -> None:
        import psutil

        self.refresh()
        for process in self._living():
            with contextlib.suppress(psutil.Error):
                process.kill()
