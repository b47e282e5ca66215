"""What the sandbox must protect inside one session directory, found at any depth and kept current between commands.

``TreeIndex(root).refresh()`` answers, for the tree as it is when a command starts: the files whose names are
secrets (``secrets.is_secret_name``: ``.env*``, keys), every ``.git`` entry (named in any case: ``.GIT`` is the
repository on a case-insensitive volume) (repositories, worktree and submodule
pointer files), and, on demand, the files that are hard links to given inodes (``linked``). There is no depth or
count cap: the first refresh walks the whole tree with the one walker (``core.walk``: symlinks not followed,
``node_modules`` and every other folder entered, ``.git`` itself not); later ones only ``stat`` each folder they
know and list again the folders whose stamp changed (inode, mtime and ctime: adding, removing or renaming an entry
changes them, and ``ctime`` cannot be set back by a command), walking new subfolders whole. A 10,000-file tree costs
one ``stat`` per folder once it is known; the first walk of a huge tree costs what listing it costs (``make bench``
prints both). Memory: a small record per folder and 8 bytes per file (its inode).

One index per real root path for the process (``index_for``), shared by the sessions in that directory; each
refresh holds the index's lock. Blocking I/O: callers run it in a worker thread. Knows nothing about bubblewrap.
"""

from __future__ import annotations

import os
import stat
import threading
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hermes_acp.core.walk import folder_entries, walk
from hermes_acp.platform.case import fold

from .secrets import is_secret_name

__all__ = ["TreeIndex", "TreeScan", "index_for"]

_Stamp = tuple[int, int, int]


def _stamp(st: os.stat_result) -> _Stamp:
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(slots=True)
class _Folder:
    stamp: _Stamp
    device: int
    subfolders: tuple[str, ...]
    secrets: tuple[str, ...]
    """Names of files (or links to files) whose names are secrets."""
    gits: tuple[str, ...]
    """Names of ``.git`` entries (there is at most one, but a name is a name)."""
    inodes: array[int]
    """Inodes of the regular files here (for hard links)."""


def _listed(path: str, st: os.stat_result, entries: Iterable[os.DirEntry[str]]) -> _Folder:
    subfolders: list[str] = []
    secrets: list[str] = []
    gits: list[str] = []
    inodes: array[int] = array("Q")
    for entry in entries:
        name = entry.name
        try:
            if fold(name) == ".git":
                gits.append(name)
            elif entry.is_dir(follow_symlinks=False):
                subfolders.append(name)
            elif entry.is_file(follow_symlinks=False):
                inodes.append(entry.inode())
                if is_secret_name(name):
                    secrets.append(name)
            elif is_secret_name(name) and entry.is_symlink() and entry.is_file(follow_symlinks=True):
                secrets.append(name)
        except OSError:
            continue
    return _Folder(_stamp(st), st.st_dev, tuple(subfolders), tuple(secrets), tuple(gits), inodes)


@dataclass(frozen=True, slots=True)
class TreeScan:
    """What one refresh found (absolute paths, as strings)."""

    secrets: tuple[str, ...]
    gits: tuple[str, ...]
    folders: int
    files: int
    listed: int
    """Folders listed by this refresh (all of them the first time; the changed ones later)."""


@dataclass
class TreeIndex:
    """See the module docstring."""

    root: str
    _folders: dict[str, _Folder] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def refresh(self) -> TreeScan:
        with self._lock:
            listed = self._walk_new(self.root) if not self._folders else self._update()
            secrets: list[str] = []
            gits: list[str] = []
            files = 0
            for path, folder in self._folders.items():
                files += len(folder.inodes)
                secrets.extend(os.path.join(path, name) for name in folder.secrets)
                gits.extend(os.path.join(path, name) for name in folder.gits)
            return TreeScan(tuple(secrets), tuple(gits), len(self._folders), files, listed)

    def linked(self, wanted: set[tuple[int, int]]) -> list[str]:
        """Files in the tree that are the inodes ``wanted`` (device, inode): hard links to masked files."""
        if not wanted:
            return []
        devices = {device for device, _ in wanted}
        found: list[str] = []
        with self._lock:
            for path, folder in self._folders.items():
                if folder.device not in devices or not any((folder.device, ino) in wanted for ino in folder.inodes):
                    continue
                for entry in folder_entries(path) or []:
                    try:
                        if entry.is_file(follow_symlinks=False):
                            info = entry.stat(follow_symlinks=False)
                            if (info.st_dev, info.st_ino) in wanted:
                                found.append(entry.path)
                    except OSError:
                        continue
        return found

    def _walk_new(self, top: str) -> int:
        """Walk ``top`` whole (a root, or a folder that appeared) and record every folder; how many were listed."""
        try:
            top_stat = os.stat(top, follow_symlinks=False)
        except OSError:
            return 0
        if not stat.S_ISDIR(top_stat.st_mode):
            return 0
        grouped: dict[str, list[os.DirEntry[str]]] = {top: []}
        stats: dict[str, os.stat_result] = {top: top_stat}

        def enter(entry: os.DirEntry[str], _parent: str) -> str | None:
            if fold(entry.name) == ".git":
                return None
            try:
                stats[entry.path] = entry.stat(follow_symlinks=False)
            except OSError:
                return None
            grouped[entry.path] = []
            return entry.path

        for entry, parent in walk(top, top, enter):
            grouped[parent].append(entry)
        for path, entries in grouped.items():
            self._folders[path] = _listed(path, stats[path], entries)
        return len(grouped)

    def _update(self) -> int:
        """Stat every known folder; list again the ones that changed; walk the new ones; forget the gone ones."""
        listed = 0
        gone: list[str] = []
        for path, folder in list(self._folders.items()):
            if path not in self._folders or any(path.startswith(prefix) for prefix in gone):
                continue
            try:
                st = os.stat(path, follow_symlinks=False)
            except OSError:
                st = None
            if st is None or not stat.S_ISDIR(st.st_mode):
                self._forget(path)
                gone.append(path + "/")
                continue
            if _stamp(st) == folder.stamp:
                continue
            entries = folder_entries(path)
            if entries is None:
                self._forget(path)
                gone.append(path + "/")
                continue
            listed += 1
            fresh = _listed(path, st, entries)
            self._folders[path] = fresh
            for name in set(folder.subfolders) - set(fresh.subfolders):
                self._forget(os.path.join(path, name))
                gone.append(os.path.join(path, name) + "/")
            for name in set(fresh.subfolders) - set(folder.subfolders):
                listed += self._walk_new(os.path.join(path, name))
        return listed

    def _forget(self, path: str) -> None:
        """Drop a folder and everything recorded under it."""
        prefix = path + "/"
        for known in [p for p in self._folders if p == path or p.startswith(prefix)]:
            del self._folders[known]


_indexes: dict[str, TreeIndex] = {}
_indexes_lock = threading.Lock()


def index_for(root: Path) -> TreeIndex:
    """The process's index of the real folder ``root`` (made on first use; the first refresh walks it)."""
    key = os.path.realpath(root)
    with _indexes_lock:
        found = _indexes.get(key)
        if found is None:
            found = _indexes[key] = TreeIndex(key)
        return found
