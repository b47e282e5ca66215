"""Commands in a sandbox: bubblewrap (``bwrap``) on Linux, configured by ``[sandbox]``.

What a sandboxed command sees:

- **files:** the whole file system read-only, except the session's directories (read-write) and a private ``/tmp``
  (and ``/var/tmp``), empty at the start of each command;
- **repositories:** in each git repository inside them, ``.git/config`` and ``.git/hooks`` are read-only and
  ``.git`` cannot be swapped (git, the user's or the editor's, runs what they name outside the sandbox);
- **masked:** ``~/.ssh``, ``~/.aws``, ``~/.gnupg``, ``~/.config/gh``, ``~/.netrc``, ``~/.docker/config.json``,
  ``$HERMES_ACP_HOME``, the Docker socket, the ssh-agent socket (unless ``SSH_AUTH_SOCK`` is in ``pass_env``), the
  user's runtime folder (``$XDG_RUNTIME_DIR``, ``/run/user/UID``: the session's D-Bus bus, keyring, gpg-agent,
  podman; a passed ssh-agent socket there stays), ``.env*`` files inside the session's directories (found by a
  bounded walk), and ``[sandbox] mask``: folders are empty, files read as empty, nothing there can be written;
- **devices:** a minimal ``/dev`` (null, zero, random, tty, pts, shm);
- **processes:** its own PID namespace (it cannot see or signal the agent or the editor), no controlling terminal
  to push keystrokes into (locally it starts without one; in the editor's terminal it gets a session of its own)
  and no capabilities, even as root (so it cannot remount anything writable); it dies with its parent;
- **network:** on, unless ``[sandbox] network = false`` or the session is in ``read_only`` mode;
- **environment:** ours without secrets (``environment.EnvPolicy``), ``TMPDIR=/tmp``, and the command's own
  variables, which bwrap sets inside the sandbox (bwrap itself starts without them: ``LD_PRELOAD`` there would run
  code outside).

``[sandbox] mode``: ``auto`` sandboxes where bwrap works; ``required`` refuses commands where it does not; ``off``
runs commands unconfined. Whether bwrap works is probed once per process (one ``bwrap … true``, a few ms, in a
worker thread). For the editor's terminals (``terminal/create``) the same ``bwrap`` line is handed over: the editor
runs it on this machine in its own environment; the line unsets the withheld variables by name, so their values
never travel, and sets the command's variables itself.

``explain`` turns what a command printed into notes for the model when the sandbox stopped something (a write
outside, a masked path, no network), so it asks the user instead of retrying. This module decides nothing about
approval (the terminal tool and the policy do) and knows nothing about ACP.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio

from hermes_acp.core import ModeId
from hermes_acp.core.notice import Notice
from hermes_acp.home import default_home

from .environment import EnvPolicy

if TYPE_CHECKING:
    from hermes_acp.config import Settings

__all__ = [
    "HOME_MASKS",
    "Availability",
    "Confined",
    "Sandbox",
    "SandboxMode",
    "probe",
]

SandboxMode = Literal["auto", "required", "off"]
HOME_MASKS = ("~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gh", "~/.netrc", "~/.docker/config.json")
SOCKET_MASKS = ("/var/run/docker.sock", "/run/docker.sock")
"""The Docker socket is root on the host: a command that reaches it leaves any sandbox."""
PROBE_TIMEOUT_S = 5.0
ENV_SCAN_ENTRIES = 20_000
"""Entries the walk for ``.env*`` files looks at per command, at most (``.git`` and ``node_modules`` skipped)."""
ENV_SCAN_DEPTH = 6
_SKIPPED_DIRS = frozenset({".git", "node_modules", ".hg", ".svn"})
_INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap)"


@dataclass(frozen=True, slots=True)
class Availability:
    """Whether commands can be sandboxed here: the bwrap found, or what is wrong."""

    usable: bool
    bwrap: str | None = None
    problem: str | None = None

    def describe(self) -> str:
        if self.usable:
            return f"commands run in a bubblewrap sandbox ({self.bwrap})"
        return f"commands cannot be sandboxed: {self.problem}"


_probe_lock = threading.Lock()
_probed: dict[str | None, Availability] = {}


def _base_args(*, network: bool) -> list[str]:
    args = ["--die-with-parent", "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL"]
    if not network:
        args.append("--unshare-net")
    return [*args, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]


def probe(bwrap: str | None = None) -> Availability:
    """Whether bwrap works here (found, and able to build the sandbox); blocking, cached per process and path."""
    with _probe_lock:
        cached = _probed.get(bwrap)
        if cached is None:
            cached = _probed[bwrap] = _probe(bwrap)
        return cached


def _probe(bwrap: str | None) -> Availability:
    if not sys.platform.startswith("linux"):
        return Availability(False, None, f"the sandbox needs Linux (bubblewrap); this is {sys.platform}")
    path = bwrap or shutil.which("bwrap")
    if path is None:
        return Availability(False, None, f"bubblewrap (bwrap) is not installed: {_INSTALL_HINT}")
    true = shutil.which("true") or "/bin/true"
    try:
        done = subprocess.run(
            [path, *_base_args(network=False), "--", true],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Availability(False, path, f"{path} could not be run: {exc}")
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1] if said else f"exit status {done.returncode}"
        return Availability(False, path, f"{path} cannot build a sandbox here ({why}); user namespaces may be disabled")
    return Availability(True, path)


@dataclass(frozen=True, slots=True)
class Confined:
    """A command line ready to run: ``argv`` (through bwrap when ``sandboxed``) and its environment."""

    argv: list[str]
    env: dict[str, str]
    sandboxed: bool
    network: bool
    masked: tuple[Path, ...] = ()
    roots: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True)
class _Layout:
    roots: tuple[Path, ...]
    masks: tuple[tuple[Path, bool], ...]
    """Each masked path, and whether it is a folder; nothing inside a masked folder is listed again."""
    kept: tuple[Path, ...]
    """Sockets inside a masked folder that stay reachable (the ssh-agent's, when ``SSH_AUTH_SOCK`` is passed)."""
    pinned: tuple[Path, ...]
    """Folders bound onto themselves, so that they cannot be renamed or replaced (each repository's ``.git``)."""
    frozen: tuple[Path, ...]
    """Paths made read-only inside the writable roots (``.git/config``, ``.git/hooks``, ``.git`` pointer files)."""
    empty: Path
    var_tmp: bool


@dataclass(frozen=True, slots=True)
class Sandbox:
    """The session's sandbox settings (``[sandbox]``) and how a command is confined by them."""

    mode: SandboxMode = "auto"
    network: bool = True
    mask: tuple[str, ...] = ()
    env_policy: EnvPolicy = field(default_factory=EnvPolicy)
    home: Path | None = None
    """``$HERMES_ACP_HOME``: masked, and where the empty file that stands in for masked files is kept."""
    bwrap: str | None = None
    """A bwrap to use instead of the one on PATH."""
    environ: Mapping[str, str] | None = None
    """The environment commands start from (the session's client's, in a session host); None: this process's."""

    @classmethod
    def from_settings(cls, settings: Settings, environ: Mapping[str, str] | None = None) -> Sandbox:
        section = settings.sandbox
        keys = [provider.api_key_env for provider in settings.providers.values()]
        return cls(
            mode=section.mode,
            network=section.network,
            mask=tuple(section.mask),
            env_policy=EnvPolicy.of(keys, section.pass_env),
            home=settings.home,
            environ=environ,
        )

    @classmethod
    def default(cls) -> Sandbox:
        """``mode = "auto"`` with the default masks, for contexts that were given no settings."""
        return cls(home=default_home(os.environ))

    def probe(self) -> Availability:
        """Whether commands will be sandboxed (blocking when not probed yet; ``mode = "off"``: never)."""
        if self.mode == "off":
            return Availability(False, None, '[sandbox] mode = "off"')
        return probe(self.bwrap)

    async def availability(self) -> Availability:
        """``probe`` without blocking the event loop (a worker thread the first time)."""
        if self.mode != "off" and self.bwrap not in _probed:
            return await anyio.to_thread.run_sync(self.probe)
        return self.probe()

    def notice(self, availability: Availability) -> Notice | None:
        """What the session tells the user once when commands are not sandboxed although they should be."""
        if availability.usable or self.mode == "off":
            return None
        if self.mode == "required":
            return Notice(
                "error",
                "Commands are refused in this session",
                f'[sandbox] mode = "required" and {availability.problem}',
            )
        return Notice(
            "warning",
            "Commands run without a sandbox here",
            f"{availability.problem}; so each one asks for permission, in every mode",
        )

    async def confine(
        self,
        argv: Sequence[str],
        *,
        roots: Sequence[Path],
        cwd: Path,
        mode: ModeId,
        extra_env: Mapping[str, str],
        for_editor: bool = False,
        environ: Mapping[str, str] | None = None,
    ) -> Confined:
        """The command line and environment for ``argv``: sandboxed when available (``mode`` decides the network).

        ``for_editor``: the line is handed to the editor's terminal, which starts it in its own environment; the
        withheld variables are unset by name inside the command line instead. In a sandbox, ``extra_env`` (the
        model's choice) is set inside it by bwrap, never in the environment bwrap itself starts with: bwrap runs
        outside the sandbox, and its dynamic loader obeys ``LD_PRELOAD`` and the like.
        """
        environ = (self.environ if self.environ is not None else os.environ) if environ is None else environ
        availability = await self.availability()
        withheld = self.env_policy.withheld_names(environ)
        sandboxed = availability.usable and availability.bwrap is not None
        network = self.network and mode != "read_only"
        if not sandboxed:
            env = dict(extra_env)
            if for_editor:
                unset = [part for name in withheld for part in ("-u", name)]
                line = [shutil.which("env") or "/usr/bin/env", *unset, *argv] if withheld else list(argv)
                return Confined(line, env, sandboxed=False, network=True)
            return Confined(list(argv), {**self.env_policy.filter(environ), **env}, sandboxed=False, network=True)
        assert availability.bwrap is not None
        layout = await anyio.to_thread.run_sync(self._layout, tuple(roots), dict(environ))
        args = [availability.bwrap, *_base_args(network=network)]
        if for_editor:
            # The editor starts the line on a terminal; without a session of its own the command could push
            # keystrokes into it (TIOCSTI). Local commands start without a terminal, in one process group that the
            # runner ends as a whole, which a new session would leave.
            args.append("--new-session")
        if layout.var_tmp:
            args += ["--tmpfs", "/var/tmp"]
        for root in layout.roots:
            args += ["--bind", str(root), str(root)]
        for folder in layout.pinned:
            args += ["--bind", str(folder), str(folder)]
        for path in layout.frozen:
            args += ["--ro-bind", str(path), str(path)]
        for path, is_dir in layout.masks:
            if is_dir:
                args += ["--tmpfs", str(path)]
                for kept in (k for k in layout.kept if path in k.parents):
                    args += ["--bind", str(kept), str(kept)]
                args += ["--remount-ro", str(path)]
            else:
                args += ["--ro-bind", str(layout.empty), str(path)]
        hide_agent = "SSH_AUTH_SOCK" not in self.env_policy.pass_env
        launcher_env: dict[str, str] = {}
        if for_editor:
            for name in [*withheld, *(["SSH_AUTH_SOCK"] if hide_agent and "SSH_AUTH_SOCK" in environ else [])]:
                args += ["--unsetenv", name]
        else:
            launcher_env = self.env_policy.filter(environ)
            if hide_agent:
                launcher_env.pop("SSH_AUTH_SOCK", None)
        for name, value in {**extra_env, "TMPDIR": "/tmp"}.items():
            args += ["--setenv", name, value]
        args += ["--chdir", str(cwd), "--"]
        masked = tuple(path for path, _ in layout.masks)
        return Confined(
            [*args, *argv], launcher_env, sandboxed=True, network=network, masked=masked, roots=layout.roots
        )

    def _layout(self, roots: tuple[Path, ...], environ: Mapping[str, str]) -> _Layout:
        """The real roots, the existing paths to mask (each with whether it is a folder), the sockets kept inside
        masked folders and the empty file that stands in for masked files (blocking: stats, the ``.env`` walk, the
        empty file made once)."""
        real_roots = tuple(Path(os.path.realpath(root)) for root in roots)
        home = environ.get("HOME")
        wanted: list[Path] = []
        for entry in (*HOME_MASKS, *self.mask):
            if entry.startswith("~"):
                if home:
                    wanted.append(Path(home) / entry[1:].lstrip("/"))
            elif os.path.isabs(entry):
                wanted.append(Path(entry))
            else:
                wanted.extend(root / entry for root in real_roots)
        if self.home is not None:
            wanted.append(self.home)
        agent_socket = environ.get("SSH_AUTH_SOCK")
        pass_socket = "SSH_AUTH_SOCK" in self.env_policy.pass_env
        if agent_socket and not pass_socket:
            wanted.append(Path(agent_socket))
        wanted.extend(_runtime_dirs(environ))
        wanted.extend(Path(p) for p in SOCKET_MASKS)
        pinned: list[Path] = []
        frozen: list[Path] = []
        for root in real_roots:
            env_files, repositories = _scan(root)
            wanted.extend(env_files)
            for repository in repositories:
                _protect_repository(repository, real_roots, pinned, frozen)
        found: dict[Path, bool] = {}
        for path in wanted:
            real = Path(os.path.realpath(path))
            if real in found or not os.path.lexists(real):
                continue
            if any(real == root or real in root.parents for root in real_roots):
                continue  # masking it would hide the session's own directory
            found[real] = real.is_dir()
        folders = [path for path, is_dir in found.items() if is_dir]
        # What a masked folder holds is hidden with it (and bwrap could not mount onto it once it is read-only).
        masks = tuple((path, is_dir) for path, is_dir in found.items() if not any(f in path.parents for f in folders))
        kept: tuple[Path, ...] = ()
        if agent_socket and pass_socket:
            real_socket = Path(os.path.realpath(agent_socket))
            if any(folder in real_socket.parents for folder, is_dir in masks if is_dir):
                kept = (real_socket,)
        pinned_once, frozen_once = tuple(dict.fromkeys(pinned)), tuple(dict.fromkeys(frozen))
        return _Layout(real_roots, masks, kept, pinned_once, frozen_once, self._empty_file(), os.path.isdir("/var/tmp"))

    def _empty_file(self) -> Path:
        """An empty, read-only file that stands in for masked files (created once in the home's cache)."""
        folder = (self.home or default_home(os.environ)) / "cache" / "sandbox"
        path = folder / "empty"
        if not path.is_file() or path.stat().st_size:
            folder.mkdir(parents=True, exist_ok=True)
            path.unlink(missing_ok=True)
            path.touch(mode=0o444)
        return path


def _runtime_dirs(environ: Mapping[str, str]) -> list[Path]:
    """The user's runtime folders (``$XDG_RUNTIME_DIR``, ``/run/user/UID``): the session's D-Bus bus, the keyring,
    gpg-agent, podman, pipewire and Wayland listen there, and each of them can run or reveal things outside the
    sandbox (``systemd-run --user`` over the bus)."""
    found = [Path(environ["XDG_RUNTIME_DIR"])] if environ.get("XDG_RUNTIME_DIR") else []
    return [*found, Path(f"/run/user/{os.getuid()}")]


def _scan(root: Path) -> tuple[list[Path], list[Path]]:
    """``.env*`` files (and links to files) and ``.git`` entries (repository folders, worktree and submodule pointer
    files) under ``root``: a bounded walk; what ``.git`` and ``node_modules`` hold is not walked."""
    env_files: list[Path] = []
    repositories: list[Path] = []
    budget = ENV_SCAN_ENTRIES
    stack: list[tuple[str, int]] = [(str(root), 0)]
    while stack and budget > 0:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        budget -= len(entries)
        for entry in entries:
            try:
                if entry.name == ".git":
                    repositories.append(Path(entry.path))
                elif entry.is_dir(follow_symlinks=False):
                    if depth < ENV_SCAN_DEPTH and entry.name not in _SKIPPED_DIRS:
                        stack.append((entry.path, depth + 1))
                elif entry.name.startswith(".env") and entry.is_file(follow_symlinks=True):
                    env_files.append(Path(entry.path))
            except OSError:
                continue
    return env_files, repositories


def _protect_repository(entry: Path, roots: tuple[Path, ...], pinned: list[Path], frozen: list[Path]) -> None:
    """What git runs programs from, kept as it is: a repository's ``config`` (``core.fsmonitor``, ``core.pager``,
    aliases, filters) and ``hooks``, which the user's git and the editor's (``git status`` in the background) would
    run outside the sandbox; its ``.git`` folder pinned, so that it cannot be swapped for another, and a ``.git``
    pointer file kept from pointing elsewhere. Folders outside the roots are read-only already. Blocking: creates an
    empty ``hooks`` folder where there is none (as ``git init`` does), so that none can appear."""
    if entry.is_symlink():
        frozen.append(entry)
        return
    if entry.is_file():
        frozen.append(entry)
        gitdir = _pointed(entry, "gitdir:")
    elif entry.is_dir():
        pinned.append(entry)
        gitdir = entry
    else:
        return
    common = _pointed(gitdir / "commondir", "") if gitdir is not None else None
    folders = {Path(os.path.realpath(folder)) for folder in (gitdir, common) if folder is not None}
    for real in folders:
        if not any(real == root or root in real.parents for root in roots) or not real.is_dir():
            continue
        hooks = real / "hooks"
        with contextlib.suppress(OSError):
            hooks.mkdir(exist_ok=True)
        frozen.extend(path for path in (real / "config", real / "config.worktree", hooks) if path.exists())


def _pointed(pointer: Path, prefix: str) -> Path | None:
    """The folder a git pointer file names (``gitdir: ../.git/worktrees/x``, a ``commondir``), if it names one."""
    try:
        line = pointer.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not line.startswith(prefix) or not line[len(prefix) :].strip():
        return None
    return pointer.parent / line[len(prefix) :].strip()


def explain(confined: Confined, command: str, output: str, *, home: str | None) -> list[str]:
    """Notes for the model when the sandbox is what stopped a command (so it asks instead of retrying)."""
    if not confined.sandboxed:
        return []
    notes: list[str] = []
    if "Read-only file system" in output:
        notes.append(
            "[Sandbox: a write outside the session's directories failed (the rest of the file system is read-only;"
            " /tmp is private to each command). Do not try another way around it: ask the user if it is needed.]"
        )
    hidden = sorted({shown for path in confined.masked if (shown := _mentioned(path, command, home)) is not None})
    if hidden:
        notes.append(
            f"[Sandbox: {', '.join(hidden)} {'is' if len(hidden) == 1 else 'are'} hidden from commands (empty)."
            " Ask the user if the command really needs it.]"
        )
    offline = ("Could not resolve host", "Network is unreachable", "Temporary failure in name resolution")
    if not confined.network and any(phrase in output for phrase in (*offline, "Connection refused")):
        notes.append("[Sandbox: commands have no network in this session. Ask the user if it is needed.]")
    if ".git" in output and ("Read-only file system" in output or "Device or resource busy" in output):
        notes.append(
            "[Sandbox: a repository's .git/config and .git/hooks are read-only to commands (git would run what they"
            " name outside the sandbox). Ask the user to change git settings or hooks.]"
        )
    if "No such process" in output and "kill" in command:
        notes.append("[Sandbox: a command sees only its own processes; it cannot signal others.]")
    return notes


def _mentioned(path: Path, command: str, home: str | None) -> str | None:
    """How the command names a masked path, if it does: ``~/.ssh``, ``.env``, or the path itself."""
    text = str(path)
    if home and text.startswith(home.rstrip("/") + "/"):
        relative = text[len(home.rstrip("/")) + 1 :]
        if relative in command:
            return f"~/{relative}"
    if path.name.startswith(".env") and path.name in command:
        return path.name
    return text if text in command or (path.name.startswith(".") and path.name in command) else None
