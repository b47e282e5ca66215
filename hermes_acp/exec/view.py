"""What one sandboxed command sees of the file system: an allow-list, worked out when the command starts.

- **the system**, read-only: the top-level folders of ``secrets.SYSTEM`` (``/usr``, ``/etc``, ``/opt``, … or the
  links a merged-``/usr`` system has there), with ``secrets.ETC_SECRETS`` and ssh host keys masked, and of ``/run``
  only ``secrets.RUN``; no ``/home``, ``/root``, ``/srv``, ``/mnt``, ``/media``, ``/var/lib`` or any other top-level
  folder (``/data``, ``/work``);
- **a fresh home**: an empty tmpfs at ``$HOME``, with ``home_read`` bound in read-only and ``home_write`` read-write
  (``~/…``, or absolute paths for things outside the home, such as ``/home/linuxbrew/.linuxbrew``); the known
  credential files (``secrets.HOME_SECRETS``) inside those folders masked, unless an entry names the file itself;
- **the tools on PATH**: a folder of ``PATH`` outside the system and the home is bound read-only (the folder above
  it when it is a ``bin``, so a toolchain finds its libraries);
- **the session's directories**, read-write, but with every file whose name is a secret (``.env*``, keys) masked
  unless ``[sandbox] reveal`` names it, every file that is a hard link to a masked file masked too (same inode), and
  in every repository at any depth ``.git`` pinned and its ``config``, ``hooks/`` and ``info/`` read-only (git, the
  user's or the editor's, would run what they name outside the sandbox); ``[sandbox] mask`` and
  ``$HERMES_ACP_HOME`` masked where they would be visible. When the home itself is inside a session directory it
  stays visible there, with its credential files masked;
- a private ``/tmp`` and ``/var/tmp``, a minimal ``/dev``, its own ``/proc``.

``View.compute`` does the blocking work (stats, the index of each session directory: ``tree.TreeIndex``) and
``View.shows`` says what became of a path, for the notes the model gets. Knows nothing about bubblewrap's options.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hermes_acp import anchored
from hermes_acp.platform.case import fold

from .secrets import ETC_SECRETS, HOME_SECRETS, MACOS_SECRETS, MACOS_SYSTEM, RUN, SYSTEM
from .tree import index_for

__all__ = ["Mount", "MountKind", "Target", "View", "ViewRequest"]

_MODULE_DEPTH = 16
"""How deep submodules' git folders are looked for under ``modules/``."""
Shown = Literal["visible", "masked", "own", "hidden"]
"""What a command finds at a path: the real thing (or a folder on the way to it), an empty stand-in, its own
(``/proc``, ``/dev``), or not what is there outside (anything else: a path in its fresh home or ``/tmp`` holds only
what the command wrote itself)."""
_OWN = ("/proc", "/dev")


MountKind = Literal["ro", "rw", "symlink", "socket", "frozen", "pinned", "mask_file", "mask_dir", "tmpfs_home"]
"""``ro`` / ``rw``: a folder or file shown read-only / writable; ``symlink``: a link of the system's top level;
``socket``: an allow-listed Unix socket (ssh-agent); ``frozen``: inside a writable root, kept read-only (git's
configuration, hooks, info, pointer files); ``pinned``: a ``.git`` folder, writable inside but never replaced;
``mask_file`` / ``mask_dir``: a secret, shown empty; ``tmpfs_home``: the real home, replaced by a fresh one."""
Target = Literal["linux", "macos"]
"""Which system's layout the view is for (``sandbox-profile --os`` renders the other's on any machine)."""


def _this_target() -> Target:
    return "macos" if sys.platform == "darwin" else "linux"


@dataclass(frozen=True, slots=True)
class Mount:
    kind: MountKind
    path: str
    """Where it appears in the sandbox."""
    source: str = ""
    """What is bound there (the same path, a link's target, the empty file)."""


@dataclass(frozen=True, slots=True)
class ViewRequest:
    """What decides the view: the session's directories and the ``[sandbox]`` paths."""

    roots: tuple[Path, ...]
    home: str | None
    """``$HOME``."""
    home_read: tuple[str, ...] = ()
    home_write: tuple[str, ...] = ()
    mask: tuple[str, ...] = ()
    reveal: tuple[str, ...] = ()
    agent_home: Path | None = None
    path: str = ""
    """``$PATH``."""
    ssh_socket: str | None = None
    """The ssh-agent socket to keep reachable (``SSH_AUTH_SOCK`` in ``pass_env``)."""
    prepare: bool = True
    """Create the empty ``hooks`` and ``info`` folders a repository lacks (False: only look, for ``--check``)."""
    target: Target = field(default_factory=_this_target)
    """Whose system layout: this machine's by default."""


@dataclass(frozen=True, slots=True)
class View:
    """The mounts of one command's sandbox, in the order they are made, and what they leave visible."""

    mounts: tuple[Mount, ...]
    roots: tuple[str, ...]
    home: str | None
    """The fresh home's path (None: no ``$HOME``, or it lies inside a session directory)."""
    masked: tuple[str, ...]
    home_missing: tuple[str, ...] = ()
    """``home_read`` / ``home_write`` entries that do not exist here."""
    scanned: int = 0
    """Files in the session's directories the scan knows."""
    gits: tuple[str, ...] = ()
    """The ``.git`` entries in the session's directories when the command started."""
    visible: tuple[str, ...] = field(default=())
    """Every path bound in (the system, home entries, PATH folders, the roots)."""

    @classmethod
    def compute(cls, request: ViewRequest, *, empty: Path) -> View:
        """The view for ``request`` (blocking); ``empty``: the read-only empty file that stands in for masked files."""
        return _Builder(request, str(empty)).build()

    def shows(self, path: str) -> Shown:
        """What a command finds at ``path`` (absolute)."""
        real = os.path.realpath(path)
        if any(_within(real, masked) for masked in self.masked):
            return "masked"
        if any(_within(real, seen) or _within(seen, real) for seen in self.visible):
            return "visible"
        if self.home is not None and (real == self.home or _within(self.home, real)):
            return "visible"
        if real in ("/", "/tmp", "/var", "/var/tmp", "/run") or any(_within(real, own) for own in _OWN):
            return "own"
        return "hidden"


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _expand(entry: str, home: str | None) -> str | None:
    if entry.startswith("~"):
        return os.path.join(home, entry[1:].lstrip("/")) if home else None
    return entry if os.path.isabs(entry) else None


class _Builder:
    def __init__(self, request: ViewRequest, empty: str):
        self.request = request
        self.empty = empty
        self.mounts: list[Mount] = []
        self.visible: list[str] = []
        self.masked: dict[str, bool] = {}
        self.roots = tuple(dict.fromkeys(os.path.realpath(root) for root in request.roots))
        home = request.home
        self.home = os.path.realpath(home) if home and os.path.isabs(home) else None
        self.home_in_root = self.home is not None and any(_within(self.home, root) for root in self.roots)

    def build(self) -> View:
        self._system()
        missing = self._home()
        self._path_folders()
        if self.request.ssh_socket and os.path.exists(self.request.ssh_socket):
            self.mounts.append(Mount("socket", self.request.ssh_socket, self.request.ssh_socket))
        for root in self.roots:
            self.mounts.append(Mount("rw", root, root))
            self.visible.append(root)
        scanned, gits = self._roots()
        self._configured_masks()
        for path, is_dir in self._outermost_masks():
            self.mounts.append(Mount("mask_dir" if is_dir else "mask_file", path, self.empty))
        return View(
            mounts=tuple(self.mounts),
            roots=self.roots,
            home=None if self.home_in_root else self.home,
            masked=tuple(self.masked),
            home_missing=missing,
            scanned=scanned,
            gits=gits,
            visible=tuple(self.visible),
        )

    # -- the system

    def _system(self) -> None:
        if self.request.target == "macos":
            self._macos_system()
            return
        for top in SYSTEM:
            try:
                if os.path.islink(top):
                    self.mounts.append(Mount("symlink", top, os.readlink(top)))
                elif os.path.isdir(top):
                    self.mounts.append(Mount("ro", top, top))
                    self.visible.append(top)
            except OSError:
                continue
        for path in RUN:
            if os.path.exists(path):
                self.mounts.append(Mount("ro", path, path))
                self.visible.append(path)
        secrets = list(ETC_SECRETS)
        with contextlib.suppress(OSError):
            secrets.extend(
                os.path.join("/etc/ssh", name)
                for name in os.listdir("/etc/ssh")
                if name.startswith("ssh_host_") and name.endswith("_key")
            )
        for path in secrets:
            self._mask(path)

    def _macos_system(self) -> None:
        """macOS's layout; on another system (``sandbox-profile --os macos``) every entry, as macOS has it."""
        here = sys.platform == "darwin"
        for top in MACOS_SYSTEM:
            if here and not os.path.lexists(top):
                continue
            if top in ("/etc", "/var", "/tmp") or (here and os.path.islink(top)):
                self.mounts.append(Mount("symlink", top, os.readlink(top) if here else "private" + top))
            else:
                self.mounts.append(Mount("ro", top, top))
                self.visible.append(top)
        for path, is_dir in MACOS_SECRETS:
            if here:
                self._mask(path)
            else:
                self.masked[path] = is_dir

    # -- the home

    def _home(self) -> tuple[str, ...]:
        """The fresh home and what ``home_read`` / ``home_write`` put in it; the entries that do not exist."""
        home, request = self.home, self.request
        missing: list[str] = []
        entries: list[tuple[str, str, bool]] = []
        for writable, listed in ((False, request.home_read), (True, request.home_write)):
            for entry in listed:
                path = _expand(entry, home)
                if path is None:
                    continue
                if not os.path.exists(path):
                    missing.append(entry)
                    continue
                entries.append((entry, path, writable))
        if home is not None and not self.home_in_root:
            self.mounts.append(Mount("tmpfs_home", home, home))
        named = {os.path.normpath(path) for _, path, _ in entries}
        for _, path, writable in entries:
            if self.home_in_root and home is not None and _within(path, home):
                continue  # visible (and writable) as part of a session directory already
            self.mounts.append(Mount("rw" if writable else "ro", path, path))
            self.visible.append(os.path.realpath(path))
        if home is None:
            return tuple(missing)
        bound = [path for _, path, _ in entries]
        for relative in HOME_SECRETS:
            secret = os.path.join(home, relative)
            if os.path.normpath(secret) in named:
                continue  # the user named it: shown
            inside = self.home_in_root or any(_within(secret, b) and secret != b for b in bound)
            if inside and os.path.lexists(secret):
                self._mask(secret)
        return tuple(missing)

    def _path_folders(self) -> None:
        """Folders of ``PATH`` that the rest of the view leaves out (outside the system, the home and the roots)."""
        for entry in self.request.path.split(os.pathsep):
            if not os.path.isabs(entry) or not os.path.isdir(entry):
                continue
            real = os.path.realpath(entry)
            if self._covered(real) or (self.home is not None and _within(real, self.home)):
                continue
            parent = os.path.dirname(real)
            a_home = os.path.dirname(parent) == "/home" or parent in ("/root", self.home)
            folder = parent if os.path.basename(real) == "bin" and parent.count("/") >= 2 and not a_home else real
            if folder.count("/") < 2 or self._covered(folder):
                continue
            self.mounts.append(Mount("ro", folder, folder))
            self.visible.append(folder)

    def _covered(self, path: str) -> bool:
        return any(_within(path, seen) for seen in (*self.visible, *self.roots))

    # -- the session's directories

    def _roots(self) -> tuple[int, tuple[str, ...]]:
        reveal = self.request.reveal
        secrets: list[str] = []
        gits: list[str] = []
        files = 0
        indexes = []
        for root in self.roots:
            index = index_for(Path(root))
            scan = index.refresh()
            indexes.append(index)
            files += scan.files
            gits.extend(scan.gits)
            for path in scan.secrets:
                if not _revealed(path, root, reveal):
                    secrets.append(path)
        for path in secrets:
            self._mask(path)
        linked = _linked_inodes([*self.masked, *self._home_secret_files()])
        for index in indexes:
            for path in index.linked(linked):
                self._mask(path)
        pinned: list[str] = []
        frozen: list[str] = []
        for entry in gits:
            _protect_repository(Path(entry), self.roots, pinned, frozen, create=self.request.prepare)
        self.mounts.extend(Mount("pinned", path, path) for path in dict.fromkeys(pinned))
        self.mounts.extend(Mount("frozen", path, path) for path in dict.fromkeys(frozen))
        return files, tuple(gits)

    def _home_secret_files(self) -> list[str]:
        """The home's credential files (one level into its credential folders), for the hard-link check."""
        if self.home is None:
            return []
        found: list[str] = []
        for relative in HOME_SECRETS:
            path = os.path.join(self.home, relative)
            if os.path.isdir(path):
                with contextlib.suppress(OSError):
                    found.extend(os.path.join(path, name) for name in os.listdir(path))
            elif os.path.isfile(path):
                found.append(path)
        return found

    def _configured_masks(self) -> None:
        request = self.request
        wanted: list[str] = []
        for entry in request.mask:
            path = _expand(entry, self.home)
            if path is not None:
                wanted.append(path)
            elif not os.path.isabs(entry):
                wanted.extend(os.path.join(root, entry) for root in self.roots)
        if request.agent_home is not None:
            wanted.append(str(request.agent_home))
        for path in wanted:
            if os.path.lexists(path) and self._visible(os.path.realpath(path)):
                self._mask(path)

    def _visible(self, real: str) -> bool:
        if self.home is not None and _within(real, self.home) and not self.home_in_root:
            return any(_within(real, seen) for seen in self.visible)
        return self._covered(real)

    def _mask(self, path: str) -> None:
        real = os.path.realpath(path)
        if real in self.masked or not os.path.lexists(real):
            return
        if any(real == root or _within(root, real) for root in self.roots):
            return  # masking it would hide the session's own directory
        self.masked[real] = os.path.isdir(real)

    def _outermost_masks(self) -> list[tuple[str, bool]]:
        """The masks, without those inside a masked folder (hidden with it; bwrap could not mount on them once it
        is read-only)."""
        folders = [path for path, is_dir in self.masked.items() if is_dir]
        return [
            (path, is_dir)
            for path, is_dir in self.masked.items()
            if not any(_within(path, folder) and path != folder for folder in folders)
        ]


def _revealed(path: str, root: str, reveal: Sequence[str]) -> bool:
    """Whether ``[sandbox] reveal`` names the file: a pattern matched against its path relative to the session
    directory, or against its name."""
    if not reveal:
        return False
    relative = fold(os.path.relpath(path, root))
    name = fold(os.path.basename(path))
    return any(
        fnmatch.fnmatchcase(relative, fold(pattern)) or fnmatch.fnmatchcase(name, fold(pattern)) for pattern in reveal
    )


def _linked_inodes(paths: Sequence[str]) -> set[tuple[int, int]]:
    """(device, inode) of the files among ``paths`` that have more than one name."""
    found: set[tuple[int, int]] = set()
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            continue
        if info.st_nlink > 1 and not os.path.isdir(path):
            found.add((info.st_dev, info.st_ino))
    return found


def _protect_repository(
    entry: Path, roots: tuple[str, ...], pinned: list[str], frozen: list[str], *, create: bool = True
) -> None:
    """What git runs programs from, kept as it is: a repository's ``config`` (``core.fsmonitor``, ``core.pager``,
    aliases, filters), ``hooks/`` and ``info/`` (attributes pick filters and diff drivers), in its git folder and in
    every submodule's under ``modules/``, which the user's git and the editor's would run outside the sandbox; its
    ``.git`` folder pinned, so that it cannot be swapped for another, and a ``.git`` pointer file kept from pointing
    elsewhere. Folders outside the roots are read-only already. Blocking: creates an empty ``hooks`` and ``info``
    where there is none (as ``git init`` does), so that none can appear."""
    if entry.is_symlink():
        frozen.append(str(entry))
        return
    if entry.is_file():
        frozen.append(str(entry))
        gitdir = _pointed(entry, "gitdir:")
    elif entry.is_dir():
        pinned.append(str(entry))
        gitdir = entry
    else:
        return
    common = _pointed(gitdir / "commondir", "") if gitdir is not None else None
    stack = [(Path(os.path.realpath(folder)), 0) for folder in (gitdir, common) if folder is not None]
    owned = [Path(root) for root in roots]
    seen: set[Path] = set()
    while stack:
        real, depth = stack.pop()
        if real in seen or depth > _MODULE_DEPTH or not real.is_dir():
            continue
        seen.add(real)
        if not any(_within(str(real), root) for root in roots):
            continue
        if depth == 0 or (real / "config").exists():
            for name in ("hooks", "info") if create else ():
                with contextlib.suppress(OSError):  # never through a link (invariant 21)
                    anchored.make_folders(anchored.anchor_for(real, owned), real / name, mode=0o755)
            kept = (real / "config", real / "config.worktree", real / "hooks", real / "info")
            frozen.extend(str(path) for path in kept if path.exists())
            worktrees = _children(real / "worktrees")
            frozen.extend(str(wt / "config.worktree") for wt in worktrees if (wt / "config.worktree").exists())
            children = _children(real / "modules")
        else:
            children = _children(real)  # a submodule named a/b keeps its git folder in modules/a/b
        stack.extend((child, depth + 1) for child in children)


def _children(folder: Path) -> list[Path]:
    try:
        return [child for child in folder.iterdir() if child.is_dir() and not child.is_symlink()]
    except OSError:
        return []


def _pointed(pointer: Path, prefix: str) -> Path | None:
    """The folder a git pointer file names (``gitdir: ../.git/worktrees/x``, a ``commondir``), if it names one."""
    try:
        line = pointer.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not line.startswith(prefix) or not line[len(prefix) :].strip():
        return None
    return pointer.parent / line[len(prefix) :].strip()
