"""What one command may use (``[sandbox.limits]``), and how this machine makes it stick.

``Limits`` are the numbers: processes (tasks: threads count), memory, CPU seconds per process, the largest file a
process may write, the size of the command's private ``/tmp`` and home; 0 means no limit. The defaults leave room
for a real build (``cargo build``, ``npm install``, ``pytest -n 4``) and stop a runaway.

``Enforcement`` is how they are applied here, worked out once per process:

- **processes**: a pids cgroup per command where the machine lets us make one (cgroup v1 with a writable pids
  hierarchy; cgroup v2 where the agent's cgroup is delegated to it and holds only the agent, which then moves
  itself into a leaf so that commands can get children of their own); otherwise ``RLIMIT_NPROC``, set inside the
  sandbox before the command starts, where the sandbox's own user namespace makes it count only the command's
  tasks (Linux 5.14 or newer, not as root: the kernel never applies it to root);
- **memory**: the memory cgroup's limit for the whole command where the cgroup is available, and ``RLIMIT_DATA``
  per process always (private writable memory: what a process really allocates; address-space reservations such
  as V8's, Go's or the JVM's do not count, which is why ``RLIMIT_AS`` is not used);
- **CPU**: ``RLIMIT_CPU`` per process (SIGXCPU, then SIGKILL ten seconds later); the call's wall-clock timeout
  bounds the command as a whole;
- **files**: ``RLIMIT_FSIZE`` (SIGXFSZ) and no core dumps;
- **tmp**: the size of the tmpfs mounts (the sandbox's ``/tmp``, ``/var/tmp`` and home), which live in memory.

That is Linux. On macOS (``kind = "darwin"``) a small launcher sets ``RLIMIT_CPU``, ``RLIMIT_FSIZE``,
``RLIMIT_DATA`` and no core dumps by ``setrlimit`` before ``sandbox-exec`` starts (``platform.rlimits``), and the
runner's watch counts the command's process group and sums its members' resident memory (``exceeded``): macOS
counts ``RLIMIT_NPROC`` per user, so it is never set, and does not enforce ``RLIMIT_DATA`` for ``mmap``-backed
``malloc``. Windows has none yet (``kind = "none"``).

The rlimits are set by ``prlimit`` (util-linux) as the first program inside the sandbox (``CommandLimits.inner``);
joining the cgroup is the first thing the launcher does, before bwrap starts (``CommandLimits.outer``), so nothing
the command starts is outside it. ``CommandLimits.exceeded`` says when a command reached its process limit (the
cgroup's ``pids.events``, else a count of the tasks in the sandbox's PID namespace, which also stops a fork bomb
where the kernel does not enforce the limit), so the runner ends it at once with a clear reason instead of letting
it spin until its timeout. Blocking file-system work throughout: callers run it in worker threads. Knows nothing
about bubblewrap's options, tools or sessions.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from hermes_acp.platform import peers, processes, rlimits
from hermes_acp.platform.rlimits import CPU_GRACE_S
from hermes_acp.platform.system import kernel_release, system_name

if TYPE_CHECKING:
    from hermes_acp.config import LimitSettings

__all__ = ["CommandLimits", "Enforcement", "Limits", "enforcement", "unified_cgroups"]

MIB = 1024 * 1024
_PREFIX = "hermes-acp-"
_AGENT_LEAF = "hermes-acp-agent"
NprocScope = Literal["sandbox", "user", "root"]
EnforcementKind = Literal["linux", "darwin", "none"]


@dataclass(frozen=True, slots=True)
class Limits:
    """``[sandbox.limits]``: what one command may use; 0 means no limit."""

    processes: int
    """Tasks (processes and their threads) of one command."""
    memory_mib: int
    """Memory of one command (memory cgroup) and, always, private memory of each of its processes."""
    cpu_s: int
    """CPU seconds of each process (all its threads together)."""
    file_size_mib: int
    """The largest file a process may write."""
    tmp_mib: int
    """Each tmpfs of the sandbox (``/tmp``, ``/var/tmp``, the home): they are kept in memory."""

    @classmethod
    def defaults(cls) -> Limits:
        from hermes_acp.config import LimitSettings

        return cls.from_settings(LimitSettings())

    @classmethod
    def from_settings(cls, section: LimitSettings) -> Limits:
        return cls(
            processes=section.processes,
            memory_mib=section.memory_mib,
            cpu_s=section.cpu_s,
            file_size_mib=section.file_size_mib,
            tmp_mib=section.tmp_mib,
        )

    def describe(self) -> str:
        def shown(value: int, unit: str) -> str:
            return "no limit" if value == 0 else f"{value:,}{unit}"

        return (
            f"processes {shown(self.processes, '')}, memory {shown(self.memory_mib, ' MiB')},"
            f" CPU {shown(self.cpu_s, ' s')} per process, files {shown(self.file_size_mib, ' MiB')},"
            f" /tmp and home {shown(self.tmp_mib, ' MiB')} each"
        )


@dataclass(frozen=True, slots=True)
class Cgroups:
    """Where the commands' cgroups are made: folders we may create children in, for pids and (maybe) memory."""

    version: Literal[1, 2]
    pids: Path
    memory: Path | None = None


@dataclass(frozen=True, slots=True)
class Enforcement:
    """How ``Limits`` are applied on this machine (``enforcement()``)."""

    cgroups: Cgroups | None
    prlimit: str | None
    nproc: NprocScope
    """What ``RLIMIT_NPROC`` counts here: the sandbox's tasks, all of the user's, or nothing (root)."""
    cgroup_problem: str | None = None
    """Why commands get no cgroup of their own, when they do not."""
    kind: EnforcementKind = "linux"
    """Which system's mechanisms apply (see the module docstring)."""

    def processes_by(self) -> str:
        """Which mechanism bounds the number of processes (for ``--check`` and the docs)."""
        if self.kind == "darwin":
            return "the agent's count of the command's process group (RLIMIT_NPROC is per user on macOS)"
        if self.kind == "none":
            return "nothing: this system has no limits for commands yet"
        if self.cgroups is not None:
            return f"a pids cgroup per command (cgroup v{self.cgroups.version}, under {self.cgroups.pids})"
        if self.prlimit is None:
            return "nothing: prlimit (util-linux) is not installed and no pids cgroup can be made"
        if self.nproc == "sandbox":
            return "RLIMIT_NPROC inside the sandbox's user namespace (counts the command's tasks only)"
        if self.nproc == "user":
            return "RLIMIT_NPROC (this kernel counts all of the user's tasks against it)"
        return "the agent's own count of the sandbox's tasks (RLIMIT_NPROC does not apply to root)"

    def describe(self) -> list[str]:
        if self.kind == "darwin":
            return [
                f"processes: {self.processes_by()}",
                "memory: watched (the resident memory of the command's process group), not a kernel limit",
                "CPU, file size, data, core dumps: setrlimit in a launcher before sandbox-exec",
            ]
        if self.kind == "none":
            return ["processes, memory, CPU, file size: not limited on this system"]
        lines = [f"processes: {self.processes_by()}"]
        if self.cgroups is None and self.cgroup_problem:
            lines.append(f"no cgroup: {self.cgroup_problem}")
        memory = "the memory cgroup per command and " if self.cgroups and self.cgroups.memory else ""
        lines.append(f"memory: {memory}RLIMIT_DATA per process" if self.prlimit else f"memory: {memory or 'none'}")
        if self.prlimit is None:
            lines.append("CPU and file size: not limited (prlimit, from util-linux, is not installed)")
        else:
            lines.append(f"CPU, file size, core dumps: RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_CORE by {self.prlimit}")
        return lines


_lock = threading.Lock()
_found: Enforcement | None = None
_counter = itertools.count(1)


def enforcement(*, prepare: bool = True) -> Enforcement:
    """How limits are applied here (blocking; cached once found with ``prepare``). ``prepare=False`` (``--check``)
    only looks: it neither makes a cgroup nor moves the process, so it may say "v2" where preparing would fail."""
    global _found
    with _lock:
        if _found is not None:
            return _found
        found = _probe(prepare=prepare)
        if prepare:
            _found = found
        return found


def _probe(*, prepare: bool) -> Enforcement:
    match system_name():
        case "darwin":
            return Enforcement(None, None, "user", kind="darwin")
        case "win32":
            return Enforcement(None, None, "user", "this system has no cgroups", kind="none")
        case _:
            pass
    prlimit = shutil.which("prlimit", path=os.environ.get("PATH", "") + ":/usr/bin:/bin")
    nproc: NprocScope = "root" if peers.is_root() else ("sandbox" if _kernel_at_least(5, 14) else "user")
    cgroups, problem = _find_cgroups(prepare=prepare)
    return Enforcement(cgroups, prlimit, nproc, problem)


def _kernel_at_least(major: int, minor: int) -> bool:
    release = kernel_release().split("-")[0].split(".")
    try:
        return (int(release[0]), int(release[1])) >= (major, minor)
    except (IndexError, ValueError):
        return False


# ---------------------------------------------------------------------------------------------------- cgroups


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """cgroup mounts from ``/proc/self/mountinfo``: (root in the hierarchy, mount point, type, super options)."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        found.append((fields[3], fields[4], tail[0], set(tail[2].split(","))))
    return found


def _own_cgroups() -> dict[str, str]:
    """``/proc/self/cgroup`` as {controller (or "" for v2): path}."""
    found: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                found[controller] = parts[2]
    return found


def _folder(mount_root: str, mount_point: str, path: str) -> Path:
    relative = path[len(mount_root) :] if mount_root != "/" and path.startswith(mount_root) else path
    return Path(mount_point) / relative.lstrip("/")


def _find_cgroups(*, prepare: bool) -> tuple[Cgroups | None, str | None]:
    own = _own_cgroups()
    mounts = _mounts()
    v1 = {}
    for root, point, kind, options in mounts:
        for controller in ("pids", "memory"):
            if kind == "cgroup" and controller in options and controller in own:
                v1[controller] = _folder(root, point, own[controller])
    if "pids" in v1:
        problem = _try_child(v1["pids"], "pids.max")
        if problem is None:
            memory = v1.get("memory")
            if memory is not None and _try_child(memory, "memory.limit_in_bytes") is not None:
                memory = None
            return Cgroups(1, v1["pids"], memory), None
        return None, problem
    unified = next(((root, point) for root, point, kind, _ in mounts if kind == "cgroup2"), None)
    if unified is None or "" not in own:
        return None, "no cgroup file system with a pids controller is mounted"
    return unified_cgroups(_folder(unified[0], unified[1], own[""]), prepare=prepare)


def _try_child(parent: Path, limit_file: str) -> str | None:
    """Make and remove a child cgroup under ``parent``; None when that works, else why not."""
    probe = parent / f"{_PREFIX}probe-{os.getpid()}"
    try:
        probe.mkdir(exist_ok=True)
        try:
            if not (probe / limit_file).exists() or not os.access(probe / "cgroup.procs", os.W_OK):
                return f"{parent} gives no {limit_file} we may set"
        finally:
            probe.rmdir()
    except OSError as exc:
        return f"cannot make a cgroup under {parent} ({exc.strerror or exc})"
    _sweep(parent)
    return None


def unified_cgroups(own: Path, *, prepare: bool) -> tuple[Cgroups | None, str | None]:
    """cgroup v2: children of the agent's own cgroup ``own`` (its folder), when it is delegated to us and holds nothing
    but the agent; else None and why not. ``prepare``: move the agent into a leaf and enable the controllers."""
    try:
        controllers = (own / "cgroup.controllers").read_text().split()
        enabled = (own / "cgroup.subtree_control").read_text().split()
    except OSError as exc:
        return None, f"cannot read the agent's cgroup {own} ({exc.strerror or exc})"
    if "pids" not in controllers:
        return None, f"the pids controller is not delegated to the agent's cgroup {own}"
    if not os.access(own, os.W_OK) or not os.access(own / "cgroup.subtree_control", os.W_OK):
        return None, f"the agent's cgroup {own} is not delegated to it (not writable)"
    memory_ok = "memory" in controllers
    if "pids" in enabled:
        return Cgroups(2, own, own if "memory" in enabled else None), None
    try:
        members = [int(pid) for pid in (own / "cgroup.procs").read_text().split()]
    except (OSError, ValueError) as exc:
        return None, f"cannot read the processes of {own} ({exc})"
    if members != [os.getpid()]:
        return None, f"other processes share the agent's cgroup {own}, so it cannot give commands cgroups of their own"
    if not prepare:
        return Cgroups(2, own, own if memory_ok else None), None
    leaf = own / _AGENT_LEAF
    try:
        leaf.mkdir(exist_ok=True)
        (leaf / "cgroup.procs").write_text(str(os.getpid()))
        (own / "cgroup.subtree_control").write_text("+pids" + (" +memory" if memory_ok else ""))
    except OSError as exc:
        with contextlib.suppress(OSError):
            (own / "cgroup.procs").write_text(str(os.getpid()))
            leaf.rmdir()
        return None, f"cannot enable the pids controller for children of {own} ({exc.strerror or exc})"
    return Cgroups(2, own, own if memory_ok else None), None


def _sweep(parent: Path) -> None:
    """Remove command cgroups left by agents that are gone (a kill -9): empty ones only."""
    with contextlib.suppress(OSError):
        for child in parent.iterdir():
            name = child.name
            if not name.startswith(_PREFIX) or name == _AGENT_LEAF:
                continue
            owner = name[len(_PREFIX) :].split("-")[0]
            if owner.isdigit() and int(owner) != os.getpid() and not _alive(int(owner)):
                with contextlib.suppress(OSError):
                    child.rmdir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_counter(path: Path, key: str) -> int:
    """The number after ``key`` in a flat-keyed cgroup file (``pids.events``: ``max 3``); 0 when missing."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


# ------------------------------------------------------------------------------------------ one command's limits


@dataclass
class CommandLimits:
    """One command's limits: its cgroups (made by ``make``), the argv wrappers, the watch, and ``close``."""

    limits: Limits
    enforcement: Enforcement
    folders: list[Path] = field(default_factory=list)
    """The command's cgroups (pids first, then memory on cgroup v1)."""
    for_editor: bool = False
    _namespace: str | None = None

    @classmethod
    def make(cls, limits: Limits, found: Enforcement, *, for_editor: bool) -> CommandLimits:
        """The limits of one command, its cgroups made (blocking). The editor's terminals join the cgroup only on
        cgroup v1 (v2 would need the editor's process to be under the agent's cgroup)."""
        made = cls(limits, found, for_editor=for_editor)
        cgroups = found.cgroups
        if cgroups is None or (limits.processes == 0 and limits.memory_mib == 0):
            return made
        if for_editor and cgroups.version == 2:
            return made
        name = f"{_PREFIX}{os.getpid()}-{next(_counter)}"
        try:
            pids = cgroups.pids / name
            pids.mkdir()
            made.folders.append(pids)
            if limits.processes:
                (pids / "pids.max").write_text(str(limits.processes))
            if cgroups.memory is not None and limits.memory_mib:
                memory = pids if cgroups.version == 2 else cgroups.memory / name
                if memory != pids:
                    memory.mkdir()
                    made.folders.append(memory)
                limit_file = "memory.max" if cgroups.version == 2 else "memory.limit_in_bytes"
                (memory / limit_file).write_text(str(limits.memory_mib * MIB))
        except OSError:
            made.close()
            made.folders = []
        return made

    @property
    def in_cgroup(self) -> bool:
        return bool(self.folders)

    @property
    def counts_group(self) -> bool:
        """Whether the watch counts the command's process group (macOS), so it needs the command's pid."""
        return self.enforcement.kind == "darwin" and bool(self.limits.processes or self.limits.memory_mib)

    def outer(self, argv: list[str]) -> list[str]:
        """``argv`` (the bwrap line) started inside the command's cgroups: a shell writes its own pid into each
        ``cgroup.procs`` and then becomes ``argv``, so everything it starts is counted. On macOS: ``argv`` (the
        ``sandbox-exec`` line) started by the launcher that sets the per-process limits."""
        if self.enforcement.kind == "darwin":
            return self.launcher() + argv
        if not self.folders:
            return argv
        join = (
            'while [ "$1" != -- ]; do echo $$ > "$1" || { echo "hermes-acp: cannot enter the command\'s cgroup'
            ' $1" >&2; exit 125; }; shift; done; shift; exec "$@"'
        )
        sh = "/bin/sh" if os.path.exists("/bin/sh") else shutil.which("sh") or "sh"  # never a PATH shim
        return [sh, "-c", join, "hermes-acp-limits", *(str(f / "cgroup.procs") for f in self.folders), "--", *argv]

    def inner(self, argv: list[str], *, sandboxed: bool) -> list[str]:
        """``argv`` started by prlimit with the per-process limits (as is without prlimit). ``RLIMIT_NPROC`` only
        inside a sandbox, whose user namespace has it count the command's tasks: outside, it would count every
        process of the user."""
        prlimit = self.enforcement.prlimit
        if prlimit is None or self.enforcement.kind != "linux":
            return argv
        nproc = self.limits.processes if sandboxed else 0
        wanted: list[tuple[str, int, int | None, rlimits.Resource]] = [
            ("--nproc", nproc, None, "nproc"),
            ("--data", self.limits.memory_mib * MIB, None, "data"),
            ("--cpu", self.limits.cpu_s, self.limits.cpu_s + CPU_GRACE_S, "cpu"),
            ("--fsize", self.limits.file_size_mib * MIB, None, "fsize"),
        ]
        options = ["--core=0"]
        for option, wanted_soft, hard, which in wanted:
            if wanted_soft <= 0:
                continue
            current_hard = rlimits.hard_ceiling(which)
            soft, top = wanted_soft, hard if hard is not None else wanted_soft
            if current_hard is not None:
                soft, top = min(soft, current_hard), min(top, current_hard)
            options.append(f"{option}={soft}:{top}")
        return [prlimit, *options, "--", *argv]

    def launcher(self) -> list[str]:
        """The launcher that sets the per-process limits by ``setrlimit`` and becomes the command (macOS; an
        editor's terminal gets a session of its own there)."""
        return rlimits.launcher(
            cpu_s=self.limits.cpu_s,
            file_bytes=self.limits.file_size_mib * MIB,
            data_bytes=self.limits.memory_mib * MIB,
            new_session=self.for_editor,
        )

    def exceeded(self, sandbox_pid: int | None) -> str | None:
        """Why the command must end now, if it reached its process limit (blocking). ``sandbox_pid``: the pid of the
        local bwrap (None for the editor's terminals, which only the cgroup can watch)."""
        processes = self.limits.processes
        if self.enforcement.kind == "darwin":
            return None if sandbox_pid is None else self._group_exceeded(sandbox_pid)
        if processes == 0:
            return None
        if self.folders:
            if _read_counter(self.folders[0] / "pids.events", "max") > 0:
                return _process_limit(processes)
            return None
        if sandbox_pid is None:
            return None
        if self._tasks_in_sandbox(sandbox_pid) >= processes:
            return _process_limit(processes)
        return None

    def _group_exceeded(self, pid: int) -> str | None:
        """The watch of a command's process group (macOS): its member count and its resident memory."""
        most, memory = self.limits.processes, self.limits.memory_mib * MIB
        group = processes.GroupTree(pid)
        if most and group.count() >= most:
            return _process_limit(most)
        if memory and group.resident_bytes() > memory:
            return (
                f"its processes used more than {self.limits.memory_mib:,} MiB of memory together ([sandbox.limits]"
                " memory_mib) and it was ended, with everything it started"
            )
        return None

    def memory_killed(self) -> bool:
        """Whether the memory cgroup killed a process of the command (blocking)."""
        if not self.folders or self.enforcement.cgroups is None or self.enforcement.cgroups.memory is None:
            return False
        if self.enforcement.cgroups.version == 2:
            return _read_counter(self.folders[0] / "memory.events", "oom_kill") > 0
        return _read_counter(self.folders[-1] / "memory.oom_control", "oom_kill") > 0

    def _tasks_in_sandbox(self, sandbox_pid: int) -> int:
        """The tasks of the sandbox's PID namespace (the namespace of bwrap's first child): ``/proc`` scanned."""
        if self._namespace is None:
            try:
                children = Path(f"/proc/{sandbox_pid}/task/{sandbox_pid}/children").read_text().split()
                self._namespace = os.readlink(f"/proc/{children[0]}/ns/pid") if children else None
            except (OSError, IndexError):
                return 0
            if self._namespace is None:
                return 0
        count = 0
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                if os.readlink(f"/proc/{name}/ns/pid") != self._namespace:
                    continue
                stat = Path(f"/proc/{name}/stat").read_bytes()
                count += int(stat[stat.rfind(b")") + 2 :].split()[17])
            except (OSError, ValueError, IndexError):
                continue
        return count

    def close(self) -> None:
        """Kill what is left in the command's cgroups and remove them (blocking, bounded)."""
        for folder in reversed(self.folders):
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    _kill_members(folder)
                    threading.Event().wait(0.02)
        self.folders = []


def _process_limit(processes: int) -> str:
    return (
        f"it reached the limit of {processes:,} processes ([sandbox.limits] processes) and was ended, with"
        " everything it started"
    )


def _kill_members(folder: Path) -> None:
    with contextlib.suppress(OSError):
        if (folder / "cgroup.kill").exists():
            (folder / "cgroup.kill").write_text("1")
            return
        for pid in (folder / "cgroup.procs").read_text().split():
            with contextlib.suppress(ValueError):
                processes.kill_pid(int(pid))
