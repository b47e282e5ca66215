"""Commands in a sandbox: bubblewrap (``bwrap``) on Linux, configured by ``[sandbox]``; deny by default.

A sandboxed command sees an allow-list (``view.View``: the system read-only with its secrets masked, a fresh empty
home with ``home_read`` / ``home_write`` bound in, the session's directories writable except secrets and git's
configuration, a private ``/tmp``), runs with an allow-list environment (``environment.EnvPolicy``: bwrap starts it
with ``--clearenv`` and sets only those variables, ``TMPDIR=/tmp`` and the command's own), within the limits of
``[sandbox.limits]`` (``limits``), in its own PID namespace without capabilities or a controlling terminal to push
keystrokes into, and without network when ``[sandbox] network = false`` or the session is in ``read_only``. It dies
with its parent. The same line serves the editor's terminals (``terminal/create``): the editor runs it on this
machine; the environment is cleared inside it, so what the editor's own environment holds never reaches the
command.

``[sandbox] mode``: ``auto`` sandboxes where bwrap works; ``required`` refuses commands where it does not; ``off``
runs commands unconfined (still with the allow-list environment and the limits). Whether bwrap works is probed once
per process (one ``bwrap … true``, a few ms, in a worker thread). ``Sandbox.contained`` lays a command out (the view
and its limits in a worker thread), yields the line, and removes what the command's limits made when it is done.
This module decides nothing about approval (the terminal tool and the policy do) and knows nothing about ACP.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio

from hermes_acp import anchored
from hermes_acp.config import DEFAULT_HOME_READ
from hermes_acp.core import ModeId
from hermes_acp.core.notice import Notice
from hermes_acp.home import default_home

from .environment import EnvPolicy
from .git import quarantine_new_repositories
from .limits import MIB, CommandLimits, Enforcement, Limits, enforcement
from .tree import index_for
from .view import View, ViewRequest

if TYPE_CHECKING:
    from hermes_acp.config import Settings

__all__ = ["DEFAULT_HOME_READ", "Availability", "Confined", "Sandbox", "SandboxMode", "probe"]

SandboxMode = Literal["auto", "required", "off"]
PROBE_TIMEOUT_S = 5.0
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
    args = ["--die-with-parent", "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL", "--clearenv"]
    if not network:
        args.append("--unshare-net")
    return args


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
    true = os.path.realpath(shutil.which("true") or "/bin/true")
    layout = ["--ro-bind", "/", "/", "--size", str(MIB), "--tmpfs", "/tmp", "--remount-ro", "/", "--proc", "/proc"]
    try:
        done = subprocess.run(
            [path, *_base_args(network=False), *layout, "--dev", "/dev", "--", true],
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
        if "Unknown option" in why:
            return Availability(False, path, f"{path} is too old ({why}): bubblewrap 0.6 or newer is needed")
        return Availability(False, path, f"{path} cannot build a sandbox here ({why}); user namespaces may be disabled")
    return Availability(True, path)


@dataclass(frozen=True, slots=True)
class Confined:
    """A command line ready to run: ``argv`` (through bwrap when ``sandboxed``), its environment, what it sees
    (``view``, when sandboxed) and its limits (``limits``: the runner watches them)."""

    argv: list[str]
    env: dict[str, str]
    sandboxed: bool
    network: bool
    view: View | None = None
    limits: CommandLimits | None = None
    aftermath: list[str] = field(default_factory=list)
    """Notes for the model about what the command left (``Sandbox.contained`` adds them once it is done)."""


@dataclass(frozen=True, slots=True)
class Sandbox:
    """The session's sandbox settings (``[sandbox]``) and how a command is confined by them."""

    mode: SandboxMode = "auto"
    network: bool = True
    mask: tuple[str, ...] = ()
    reveal: tuple[str, ...] = ()
    home_read: tuple[str, ...] = DEFAULT_HOME_READ
    home_write: tuple[str, ...] = ()
    env_policy: EnvPolicy = field(default_factory=EnvPolicy)
    limits: Limits = field(default_factory=Limits.defaults)
    home: Path | None = None
    """``$HERMES_ACP_HOME``: masked where visible, and where the empty file that stands in for masked files is kept."""
    bwrap: str | None = None
    """A bwrap to use instead of the one on PATH."""
    environ: Mapping[str, str] | None = None
    """The environment commands start from (the session's client's, in a session host); None: this process's."""

    @classmethod
    def from_settings(cls, settings: Settings, environ: Mapping[str, str] | None = None) -> Sandbox:
        section = settings.sandbox
        return cls(
            mode=section.mode,
            network=section.network,
            mask=tuple(section.mask),
            reveal=tuple(section.reveal),
            home_read=tuple(section.home_read),
            home_write=tuple(section.home_write),
            env_policy=EnvPolicy.of(section.pass_env),
            limits=Limits.from_settings(section.limits),
            home=settings.home,
            environ=environ,
        )

    @classmethod
    def default(cls) -> Sandbox:
        """``mode = "auto"`` with the defaults, for contexts that were given no settings."""
        return cls(home=default_home(os.environ))

    def environment(self) -> Mapping[str, str]:
        """The environment commands start from: the session's (``environ``), else this process's."""
        return self.environ if self.environ is not None else os.environ

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

    def enforcement(self) -> Enforcement:
        """How the limits are applied here (blocking the first time: the cgroup probe)."""
        return enforcement()

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

    def view_request(self, roots: Sequence[Path], environ: Mapping[str, str]) -> ViewRequest:
        passes_agent = "SSH_AUTH_SOCK" in self.env_policy.pass_env
        return ViewRequest(
            roots=tuple(roots),
            home=environ.get("HOME"),
            home_read=self.home_read,
            home_write=self.home_write,
            mask=self.mask,
            reveal=self.reveal,
            agent_home=self.home,
            path=environ.get("PATH", ""),
            ssh_socket=environ.get("SSH_AUTH_SOCK") if passes_agent else None,
        )

    @contextlib.asynccontextmanager
    async def contained(
        self,
        argv: Sequence[str],
        *,
        roots: Sequence[Path],
        cwd: Path,
        mode: ModeId,
        extra_env: Mapping[str, str],
        for_editor: bool = False,
        environ: Mapping[str, str] | None = None,
    ) -> AsyncIterator[Confined]:
        """The command line for ``argv``, for as long as the command runs; afterwards its cgroups are removed and the
        repositories it created are made harmless (``git.quarantine_new_repositories``; notes in ``aftermath``).

        Sandboxed when available (``mode`` decides the network). ``for_editor``: the line is handed to the editor's
        terminal, which starts it in its own environment; the environment is cleared inside the line. ``extra_env``
        (the model's choice) is set inside the sandbox by bwrap, never in the environment bwrap itself starts with:
        bwrap runs outside the sandbox, and its dynamic loader obeys ``LD_PRELOAD`` and the like.
        """
        confined = await self.confine(
            argv, roots=roots, cwd=cwd, mode=mode, extra_env=extra_env, for_editor=for_editor, environ=environ
        )
        try:
            yield confined
        finally:
            with anyio.CancelScope(shield=True):
                if confined.limits is not None:
                    await anyio.to_thread.run_sync(confined.limits.close)
                if confined.view is not None:
                    confined.aftermath.extend(await anyio.to_thread.run_sync(_aftermath, confined.view))

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
        """``contained``'s line, whose limits the caller must ``close`` (blocking) once the command is done."""
        environ = self.environment() if environ is None else environ
        availability = await self.availability()
        sandboxed = availability.usable and availability.bwrap is not None
        network = self.network and mode != "read_only"
        base = self.env_policy.base(environ)
        if not sandboxed:
            limits = await anyio.to_thread.run_sync(self._limits, for_editor)
            env = {**base, **extra_env}
            command = limits.inner(list(argv), sandboxed=False)
            if for_editor:
                line = [_env_tool(), "-i", *(f"{k}={v}" for k, v in env.items()), *command]
                return Confined(limits.outer(line), {}, sandboxed=False, network=True, limits=limits)
            return Confined(limits.outer(command), env, sandboxed=False, network=True, limits=limits)
        assert availability.bwrap is not None
        request = self.view_request(roots, environ)
        view, limits = await anyio.to_thread.run_sync(self._lay_out, request, for_editor)
        args = [availability.bwrap, *_base_args(network=network)]
        if for_editor:
            # The editor starts the line on a terminal; without a session of its own the command could push
            # keystrokes into it (TIOCSTI). Local commands start without a terminal, in one process group that the
            # runner ends as a whole, which a new session would leave.
            args.append("--new-session")
        args += self._mounts(view)
        for name, value in {**base, **extra_env, "TMPDIR": "/tmp"}.items():
            args += ["--setenv", name, value]
        args += ["--chdir", str(cwd), "--", *limits.inner(list(argv), sandboxed=True)]
        env = {} if for_editor else base
        return Confined(limits.outer(args), env, sandboxed=True, network=network, view=view, limits=limits)

    def _limits(self, for_editor: bool) -> CommandLimits:
        return CommandLimits.make(self.limits, enforcement(), for_editor=for_editor)

    def _lay_out(self, request: ViewRequest, for_editor: bool) -> tuple[View, CommandLimits]:
        """The view and the limits of one command (blocking: stats, the scan, the empty file, cgroups)."""
        view = View.compute(request, empty=self._empty_file())
        return view, self._limits(for_editor)

    def _mounts(self, view: View) -> list[str]:
        size = ["--size", str(self.limits.tmp_mib * MIB)] if self.limits.tmp_mib else []
        args = ["--dev", "/dev", "--proc", "/proc", *size, "--tmpfs", "/tmp", "--dir", "/var"]
        args += ["--symlink", "../run", "/var/run", *size, "--tmpfs", "/var/tmp"]
        for mount in view.mounts:
            match mount.kind:
                case "ro":
                    args += ["--ro-bind", mount.source, mount.path]
                case "rw":
                    args += ["--bind", mount.source, mount.path]
                case "symlink":
                    args += ["--symlink", mount.source, mount.path]
                case "tmpfs_home":
                    args += [*size, "--tmpfs", mount.path]
                case "mask_file":
                    args += ["--ro-bind", mount.source, mount.path]
                case "mask_dir":
                    args += ["--tmpfs", mount.path, "--remount-ro", mount.path]
        return [*args, "--remount-ro", "/"]

    def _empty_file(self) -> Path:
        """An empty, read-only file that stands in for masked files (created once in the home's cache; ``/dev/null``
        when the home cannot be written)."""
        home = self.home or default_home(os.environ)
        path = home / "cache" / "sandbox" / "empty"
        try:
            facts = anchored.lstat(home, path)
            if facts is None or not stat.S_ISREG(facts.st_mode) or facts.st_size:
                anchored.write_file(
                    home, path, b"", new_mode=0o444, folders=anchored.PRIVATE_FOLDER, keep_mode=False, durable=False
                )
        except OSError:
            return Path(os.devnull)
        return path


def _aftermath(view: View) -> list[str]:
    """What a sandboxed command left that must not run outside it: the repositories it created (blocking)."""
    before = set(view.gits)
    created = [entry for root in view.roots for entry in index_for(Path(root)).refresh().gits if entry not in before]
    return quarantine_new_repositories(created, view.roots) if created else []


@functools.cache
def _env_tool() -> str:
    """``env`` from the system, never a shim earlier on ``PATH``."""
    return "/usr/bin/env" if os.path.exists("/usr/bin/env") else shutil.which("env") or "env"
