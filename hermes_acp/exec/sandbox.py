"""Commands in a sandbox: bubblewrap (``bwrap``) on Linux, Seatbelt (``sandbox-exec``) on macOS, none on Windows
(``platform.system.sandbox_kind``); configured by ``[sandbox]``; deny by default. Both sandboxes are renderings of
one ``SandboxPolicy`` (``bwrap``, ``seatbelt``); what follows describes bubblewrap's, and ``seatbelt`` says where
Seatbelt's differs.

A sandboxed command sees an allow-list (``view.View``: the system read-only with its secrets masked, a fresh empty
home with ``home_read`` / ``home_write`` bound in, the session's directories writable except secrets and git's
configuration, a private ``/tmp``), runs with an allow-list environment (``environment.EnvPolicy``: bwrap starts it
with ``--clearenv`` and sets only those variables, ``TMPDIR=/tmp`` and the command's own), within the limits of
``[sandbox.limits]`` (``limits``), in its own PID namespace without capabilities or a controlling terminal to push
keystrokes into, and without network when ``[sandbox] network = false`` or the session is in ``read_only``. It dies
with its parent. The same line serves the editor's terminals (``terminal/create``): the editor runs it on this
machine; the environment is cleared inside it, so what the editor's own environment holds never reaches the
command.

``[sandbox] mode``: ``auto`` sandboxes where the sandbox works; ``required`` refuses commands where it does not;
``off`` runs commands unconfined (still with the allow-list environment and the limits). Whether it works is probed
once per process (one ``bwrap … true``, a few ms, in a worker thread; on macOS ``sandbox-exec`` with a permissive
profile, then with the real base profile: ``true`` must run and a file outside every grant must stay unreadable).
``Sandbox.contained`` lays a command out (the view and its limits in a worker thread), yields the line, and removes
what the command's limits made when it is done.
This module decides nothing about approval (the terminal tool and the policy do) and knows nothing about ACP.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import shutil
import stat
import subprocess
import tempfile
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
from hermes_acp.platform.system import SANDBOX_EXEC, SandboxKind, sandbox_kind, system_name

from . import bwrap, seatbelt
from .environment import EnvPolicy
from .git import quarantine_new_repositories
from .limits import MIB, CommandLimits, Enforcement, Limits, enforcement
from .sandbox_policy import SandboxPolicy
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
    """Whether commands can be sandboxed here: the tool found (bwrap, sandbox-exec), or what is wrong."""

    usable: bool
    tool: str | None = None
    problem: str | None = None
    backend: SandboxKind = "bwrap"

    @property
    def bwrap(self) -> str | None:
        """The bwrap that builds the sandbox (None: another backend, or none)."""
        return self.tool if self.backend == "bwrap" else None

    def describe(self) -> str:
        if self.usable:
            name = "Seatbelt" if self.backend == "seatbelt" else "bubblewrap"
            return f"commands run in a {name} sandbox ({self.tool})"
        return f"commands cannot be sandboxed: {self.problem}"


_probe_lock = threading.Lock()
_probed: dict[str | None, Availability] = {}
_scratch_counter = itertools.count(1)


def probe(bwrap: str | None = None) -> Availability:
    """Whether this system's sandbox works here (found, and able to build the sandbox); blocking, cached per
    process (and per bwrap path)."""
    with _probe_lock:
        cached = _probed.get(bwrap)
        if cached is None:
            kind, why = sandbox_kind()
            if kind == "bwrap":
                cached = _probe(bwrap)
            elif kind == "seatbelt":
                cached = _probe_seatbelt()
            else:
                cached = Availability(False, None, why, backend="none")
            _probed[bwrap] = cached
        return cached


def _probe(bwrap_path: str | None) -> Availability:
    path = bwrap_path or shutil.which("bwrap")
    if path is None:
        return Availability(False, None, f"bubblewrap (bwrap) is not installed: {_INSTALL_HINT}")
    true = os.path.realpath(shutil.which("true") or "/bin/true")
    layout = ["--ro-bind", "/", "/", "--size", str(MIB), "--tmpfs", "/tmp", "--remount-ro", "/", "--proc", "/proc"]
    try:
        done = subprocess.run(
            [path, *bwrap.base_args(network=False), *layout, "--dev", "/dev", "--", true],
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


def _probe_seatbelt() -> Availability:
    """``sandbox-exec`` found, able to apply a profile here (not inside another sandbox), compiling the real base
    profile (every operation and filter name it uses) and enforcing it (a file outside every grant unreadable)."""

    def unusable(why: str) -> Availability:
        return Availability(False, SANDBOX_EXEC, why, backend="seatbelt")

    if not os.access(SANDBOX_EXEC, os.X_OK):
        return Availability(False, None, f"{SANDBOX_EXEC} is not found", backend="seatbelt")
    true = "/usr/bin/true"
    with tempfile.TemporaryDirectory(prefix="hermes-acp-probe-") as folder:
        secret = os.path.join(os.path.realpath(folder), "outside")
        with open(secret, "w", encoding="ascii") as handle:
            handle.write("probe")
        empty = View(mounts=(), roots=(), home=None, masked=())
        base = seatbelt.render(SandboxPolicy(empty, network=False, cwd="/"), [true])
        steps = (
            ([SANDBOX_EXEC, "-p", "(version 1)(allow default)", true], True, "cannot apply a profile here"),
            (base, True, "does not compile the sandbox's profile"),
            ([*base[:-1], "/bin/cat", secret], False, "does not enforce the sandbox's profile"),
        )
        for line, should_pass, what in steps:
            try:
                done = subprocess.run(line, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return unusable(f"{SANDBOX_EXEC} could not be run: {exc}")
            if (done.returncode == 0) != should_pass:
                said = done.stderr.decode("utf-8", "replace").strip().splitlines()
                why = said[-1] if said else f"exit status {done.returncode}"
                return unusable(f"{SANDBOX_EXEC} {what} ({why}); a sandbox inside another sandbox cannot start")
    return Availability(True, SANDBOX_EXEC, backend="seatbelt")


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
    scratch: str | None = None
    """The command's own folder (Seatbelt: its home and ``TMPDIR``), removed once it is done."""
    policy: SandboxPolicy | None = None


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
    shell: str | None = None
    """``[terminal] shell``: the shell commands run in (None: this system's default, ``platform.shells``)."""

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
            shell=settings.terminal.shell,
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
            return Availability(False, None, '[sandbox] mode = "off"', backend=sandbox_kind()[0])
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
                if confined.scratch is not None:
                    await anyio.to_thread.run_sync(
                        functools.partial(shutil.rmtree, confined.scratch, ignore_errors=True)
                    )
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
        sandboxed = availability.usable and availability.tool is not None
        network = self.network and mode != "read_only"
        base = self.env_policy.base(environ)
        if not sandboxed:
            limits = await anyio.to_thread.run_sync(self._limits, for_editor)
            env = {**base, **extra_env}
            command = limits.inner(list(argv), sandboxed=False)
            if for_editor and system_name() != "win32":
                line = [_env_tool(), "-i", *(f"{k}={v}" for k, v in env.items()), *command]
                return Confined(limits.outer(line), {}, sandboxed=False, network=True, limits=limits)
            return Confined(limits.outer(command), env, sandboxed=False, network=True, limits=limits)
        assert availability.tool is not None
        request = self.view_request(roots, environ)
        backend = availability.backend
        view, limits, scratch = await anyio.to_thread.run_sync(self._lay_out, request, for_editor, backend)
        policy = self.policy(
            view, network=network, cwd=cwd, env={**base, **extra_env}, for_editor=for_editor, scratch=scratch
        )
        command = limits.inner(list(argv), sandboxed=True)
        if backend == "seatbelt":
            line = limits.outer(seatbelt.render(policy, command))
            if for_editor:
                line = [_env_tool(), "-i", *(f"{k}={v}" for k, v in base.items()), *line]
        else:
            line = limits.outer(bwrap.render(policy, availability.tool, command))
        env = {} if for_editor else base
        return Confined(
            line, env, sandboxed=True, network=network, view=view, limits=limits, scratch=scratch, policy=policy
        )

    def policy(
        self,
        view: View,
        *,
        network: bool,
        cwd: Path,
        env: Mapping[str, str],
        for_editor: bool = False,
        scratch: str | None = None,
    ) -> SandboxPolicy:
        """The one policy both sandboxes render, for a command that sees ``view``."""
        return SandboxPolicy(
            view, network, str(cwd), dict(env), for_editor=for_editor, tmp_mib=self.limits.tmp_mib, scratch=scratch
        )

    def _limits(self, for_editor: bool) -> CommandLimits:
        return CommandLimits.make(self.limits, enforcement(), for_editor=for_editor)

    def _lay_out(
        self, request: ViewRequest, for_editor: bool, backend: SandboxKind = "bwrap"
    ) -> tuple[View, CommandLimits, str | None]:
        """The view, the limits and (Seatbelt) the own folder of one command (blocking: stats, the scan, the empty
        file, cgroups)."""
        view = View.compute(request, empty=self._empty_file())
        scratch = _make_scratch(view, request) if backend == "seatbelt" else None
        return view, self._limits(for_editor), scratch

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


def _make_scratch(view: View, request: ViewRequest) -> str:
    """The command's own folder (Seatbelt): ``home/`` (with a link to each ``home_read`` / ``home_write`` entry of
    the real home, whose grants the profile has) and ``tmp/``, private to the user, under the system's temporary
    folder (macOS: the user's own ``/private/var/folders/…/T``)."""
    base = os.path.join(os.path.realpath(tempfile.gettempdir()), f"hermes-acp-{os.getpid()}")
    os.makedirs(base, mode=0o700, exist_ok=True)
    scratch = os.path.join(base, f"cmd-{next(_scratch_counter)}")
    home = os.path.join(scratch, "home")
    os.makedirs(home, mode=0o700)
    os.makedirs(os.path.join(scratch, "tmp"), mode=0o700)
    real_home = view.home
    if real_home is not None:
        for entry in (*request.home_read, *request.home_write):
            if not entry.startswith("~/"):
                continue
            relative = entry[2:].strip("/")
            target = os.path.join(real_home, relative)
            if relative and os.path.lexists(target):
                link = os.path.join(home, relative)
                os.makedirs(os.path.dirname(link), mode=0o700, exist_ok=True)
                with contextlib.suppress(FileExistsError):
                    os.symlink(target, link)
    return scratch


def _aftermath(view: View) -> list[str]:
    """What a sandboxed command left that must not run outside it: the repositories it created (blocking)."""
    before = set(view.gits)
    created = [entry for root in view.roots for entry in index_for(Path(root)).refresh().gits if entry not in before]
    return quarantine_new_repositories(created, view.roots) if created else []


@functools.cache
def _env_tool() -> str:
    """``env`` from the system, never a shim earlier on ``PATH``."""
    return "/usr/bin/env" if os.path.exists("/usr/bin/env") else shutil.which("env") or "env"
