"""Anchored file operations: the one way the agent writes, renames, deletes and re-modes files outside the sandbox
(file tools, rewind, caches, the home's files, config), so that it never reaches anything through a link
(invariant 21, docs/architecture.md §4.17).

Every operation starts from an *anchor*: a directory the caller owns (a session's directory, ``$HERMES_ACP_HOME`` or
a folder in it; the file-system root for a path the user approved outside them, given with its links resolved).
The anchor is opened as it is; the rest of the path is walked one component at a time with directory file
descriptors and ``O_NOFOLLOW`` (``os.open(name, ..., dir_fd=...)``). A component that is a link, or that is no
longer a folder, stops the walk with ``Refused``: nothing a link points to is ever written, renamed or deleted, and a
folder swapped for a link between a check and a write cannot redirect the write, because every step is taken from
the descriptor of the folder already reached. The last component is not followed either: a file is written under a
temporary name beside it and renamed over it (a link found there is refused: its kind changed), read and re-moded
only through an ``O_NOFOLLOW`` descriptor, and deleted only when it is a regular file.

Files are written whole (a temporary name in the same folder, written, ``fsync``-ed when ``durable``, given its
mode, renamed, then the folder ``fsync``-ed), so a crash leaves the old file or the new one. New files and folders
get exactly the mode asked for, whatever the umask (``fchmod`` after creation); ``tighten`` takes the group and other
permission bits off existing ones.

Where ``os.open`` takes no ``dir_fd`` (Windows), ``_PathFolder`` is the one fallback: the same steps by path, each
component checked with ``lstat`` first. The refusals are the same, but a swap between a check and the step after
it is not excluded there (the platform seam replaces this later).

Blocking: callers run it in a worker thread. It imports only the standard library, so every layer may use it; it
knows nothing of sessions, tools or the home's layout.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePath
from typing import BinaryIO, Protocol, TypeVar

__all__ = [
    "DIR_FD",
    "PRIVATE_FILE",
    "PRIVATE_FOLDER",
    "Folder",
    "Refused",
    "anchor_for",
    "entries",
    "folder",
    "lstat",
    "make_folders",
    "open_fd",
    "open_read",
    "remove_file",
    "rename",
    "set_mode",
    "tighten",
    "write_file",
    "write_into",
]

PRIVATE_FILE = 0o600
PRIVATE_FOLDER = 0o700
DIR_FD = {os.open, os.stat, os.unlink, os.mkdir, os.rename} <= os.supports_dir_fd
"""Whether this platform walks with directory descriptors (Linux, macOS, the BSDs); False: ``_PathFolder``."""

_P = TypeVar("_P", bound=PurePath)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)
_READ_FOLDER = os.O_RDONLY | _DIRECTORY | _CLOEXEC
_WALK = (getattr(os, "O_PATH", 0) or os.O_RDONLY) | _DIRECTORY | _NOFOLLOW | _CLOEXEC
"""How a walk opens each folder: ``O_PATH`` where there is one (search permission is enough), never a link."""
_LINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK})
"""What ``open`` says for a link under ``O_NOFOLLOW`` (Linux and macOS: ELOOP; FreeBSD: EMLINK)."""


class Refused(OSError):
    """A path the operation will not go through: ``component`` (a folder on the way, or the file itself) is a link,
    or is no longer the kind of thing it was (a folder that became a file, a file that became a folder)."""

    def __init__(self, path: PurePath, component: PurePath, why: str):
        super().__init__(errno.ELOOP, f"{component} {why}")
        self.path = path
        self.component = component
        self.why = why

    def __str__(self) -> str:
        return f"{self.component} {self.why}"


def anchor_for(path: _P, roots: Sequence[_P]) -> _P:
    """The deepest of ``roots`` that holds ``path`` (compared by name, no file-system access); the file-system root
    when none does (``path`` should then be given with its links resolved)."""
    holding = [root for root in roots if path == root or root in path.parents]
    return max(holding, key=lambda root: len(root.parts)) if holding else type(path)(path.anchor)


def _parts(anchor: PurePath, path: PurePath) -> tuple[str, ...]:
    """The components of ``path`` below ``anchor``; ``..`` is refused (a walk only goes down)."""
    parts = path.relative_to(anchor).parts
    if any(part in ("..", ".") for part in parts):
        raise ValueError(f"{path}: an anchored path goes only down from {anchor} (no '.' or '..')")
    return parts


class Folder(Protocol):
    """A folder reached by a walk: operations on its direct entries, by name, none following a link."""

    path: Path

    def lstat(self, name: str) -> os.stat_result | None:
        """The entry itself (a link is not followed); None when there is none."""
        ...

    def open(self, name: str, flags: int, mode: int = PRIVATE_FILE) -> int:
        """``os.open`` of the entry with ``O_NOFOLLOW`` (a link: ``Refused``)."""
        ...

    def child(self, name: str, make: int | None) -> Folder:
        """The sub-folder ``name``, created with mode ``make`` when missing and ``make`` is given."""
        ...

    def names(self) -> list[str]: ...

    def unlink(self, name: str) -> None: ...

    def rename(self, name: str, target: Folder, target_name: str) -> None:
        """Rename ``name`` to ``target_name`` in ``target`` (replacing it; a link there is replaced, not followed)."""
        ...

    def set_times(self, name: str, ns: int) -> None:
        """Date the entry (access and modification) at ``ns``, without following a link."""
        ...

    def sync(self) -> None:
        """Make the folder's entries durable (renames, creations)."""
        ...

    def close(self) -> None: ...


def _refuse_open(error: OSError, where: Folder, name: str, wanted: str) -> OSError:
    """The error of opening ``name`` with ``O_NOFOLLOW``: ``Refused`` for a link or a changed kind, else as it was."""
    component = where.path / name
    if error.errno in _LINK_ERRNOS:
        return Refused(component, component, "is a link, and a link is never followed")
    if error.errno == errno.ENOTDIR:
        facts = where.lstat(name)
        if facts is not None and stat.S_ISLNK(facts.st_mode):
            return Refused(component, component, "is a link, and a link is never followed")
        return Refused(component, component, f"is no longer {wanted}")
    return error


class _FdFolder:
    """A folder held by its descriptor: every operation relative to it (``dir_fd``). The walk holds ``O_PATH``
    descriptors where Linux has them (a folder on the way need only be searchable, not readable); what needs a
    readable one (listing, syncing, changing the folder's mode) opens ``.`` from it."""

    def __init__(self, fd: int, path: Path):
        self.fd = fd
        self.path = path

    def lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def open(self, name: str, flags: int, mode: int = PRIVATE_FILE) -> int:
        try:
            return os.open(name, flags | _NOFOLLOW | _CLOEXEC, mode, dir_fd=self.fd)
        except OSError as exc:
            raise _refuse_open(exc, self, name, "a file") from exc

    def child(self, name: str, make: int | None) -> Folder:
        try:
            return _FdFolder(os.open(name, _WALK, dir_fd=self.fd), self.path / name)
        except FileNotFoundError:
            if make is None:
                raise
        except OSError as exc:
            raise _refuse_open(exc, self, name, "a folder") from exc
        try:
            os.mkdir(name, make, dir_fd=self.fd)
        except FileExistsError:  # someone else made it meanwhile: walk on, as above
            try:
                return _FdFolder(os.open(name, _WALK, dir_fd=self.fd), self.path / name)
            except OSError as exc:
                raise _refuse_open(exc, self, name, "a folder") from exc
        try:
            fd = os.open(name, _READ_FOLDER | _NOFOLLOW, dir_fd=self.fd)
        except OSError as exc:
            raise _refuse_open(exc, self, name, "a folder") from exc
        _fix_mode(fd, make)
        return _FdFolder(fd, self.path / name)

    def readable(self) -> int:
        """A readable descriptor of this folder (the caller closes it)."""
        return os.open(".", _READ_FOLDER, dir_fd=self.fd)

    def names(self) -> list[str]:
        fd = self.readable()
        try:
            with os.scandir(fd) as entries:
                return [entry.name for entry in entries]
        finally:
            os.close(fd)

    def unlink(self, name: str) -> None:
        os.unlink(name, dir_fd=self.fd)

    def rename(self, name: str, target: Folder, target_name: str) -> None:
        assert isinstance(target, _FdFolder)
        os.rename(name, target_name, src_dir_fd=self.fd, dst_dir_fd=target.fd)

    def set_times(self, name: str, ns: int) -> None:
        os.utime(name, ns=(ns, ns), dir_fd=self.fd, follow_symlinks=False)

    def sync(self) -> None:
        with contextlib.suppress(OSError):  # some file systems cannot sync a folder; the rename stands
            fd = self.readable()
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def close(self) -> None:
        os.close(self.fd)


class _PathFolder:
    """The fallback where there are no directory descriptors (Windows): the same operations by path, each entry
    checked with ``lstat`` before it is used. Not proof against a swap between that check and the step after it."""

    def __init__(self, path: Path):
        self.path = path

    def lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.lstat(self.path / name)
        except FileNotFoundError:
            return None

    def _not_a_link(self, name: str) -> None:
        facts = self.lstat(name)
        if facts is not None and stat.S_ISLNK(facts.st_mode):
            component = self.path / name
            raise Refused(component, component, "is a link, and a link is never followed")

    def open(self, name: str, flags: int, mode: int = PRIVATE_FILE) -> int:
        self._not_a_link(name)
        return os.open(self.path / name, flags | _NOFOLLOW | _BINARY, mode)

    def child(self, name: str, make: int | None) -> Folder:
        self._not_a_link(name)
        path = self.path / name
        if make is not None and not os.path.lexists(path):
            with contextlib.suppress(FileExistsError):
                os.mkdir(path, make)
                os.chmod(path, make)
        facts = self.lstat(name)
        if facts is None:
            raise FileNotFoundError(errno.ENOENT, "no such folder", str(path))
        if not stat.S_ISDIR(facts.st_mode):
            raise Refused(path, path, "is no longer a folder")
        return _PathFolder(path)

    def names(self) -> list[str]:
        return os.listdir(self.path)

    def unlink(self, name: str) -> None:
        os.unlink(self.path / name)

    def rename(self, name: str, target: Folder, target_name: str) -> None:
        os.replace(self.path / name, target.path / target_name)

    def set_times(self, name: str, ns: int) -> None:
        self._not_a_link(name)
        os.utime(self.path / name, ns=(ns, ns))

    def sync(self) -> None:
        """Folders cannot be synced here; the rename stands."""

    def close(self) -> None:
        """Nothing is held."""


def _fix_mode(fd: int, mode: int) -> None:
    """Give a file or folder we just created exactly ``mode`` (creation is subject to the umask)."""
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)


def _open_anchor(anchor: PurePath, make: int | None) -> Folder:
    """The anchor, opened as it is (the caller owns it; links above it are its own business); created, with its
    missing parents, each with mode ``make``, when it is missing and ``make`` is given."""
    if make is not None and not os.path.isdir(anchor):
        _make_anchor(Path(anchor), make)
    if not DIR_FD:
        return _PathFolder(Path(anchor))
    return _FdFolder(os.open(anchor, _WALK & ~_NOFOLLOW), Path(anchor))


def _make_anchor(anchor: Path, mode: int) -> None:
    """``os.makedirs`` with ``mode`` on every folder it creates (``os.makedirs`` gives the parents the umask's)."""
    missing: list[Path] = []
    at = anchor
    while not os.path.isdir(at) and at != at.parent:
        missing.append(at)
        at = at.parent
    for created in reversed(missing):
        try:
            os.mkdir(created, mode)
        except FileExistsError:
            continue
        os.chmod(created, mode)


@contextlib.contextmanager
def folder(anchor: PurePath, path: PurePath, *, make: int | None = None) -> Iterator[Folder]:
    """The folder ``path`` (``anchor`` itself or below it), reached one component at a time; ``make``: the mode of
    the folders created where they are missing (None: a missing one is ``FileNotFoundError``)."""
    parts = _parts(anchor, path)
    held = _open_anchor(anchor, make)
    try:
        for name in parts:
            try:
                below = held.child(name, make)
            except Refused as refused:
                raise Refused(path, refused.component, refused.why) from None
            held.close()
            held = below
        yield held
    finally:
        held.close()


def _leaf(anchor: PurePath, path: PurePath) -> tuple[PurePath, str]:
    if path == anchor:
        raise ValueError(f"{path}: the anchor itself is a folder, not a file")
    return path.parent, path.name


def _refused_as(refused: Refused, path: PurePath) -> Refused:
    return Refused(path, refused.component, refused.why)


def lstat(anchor: PurePath, path: PurePath) -> os.stat_result | None:
    """The entry at ``path`` itself (a link is not followed); None when it, or a folder on its way, is missing."""
    parent, name = _leaf(anchor, path)
    try:
        with folder(anchor, parent) as held:
            return held.lstat(name)
    except FileNotFoundError:
        return None


def open_fd(
    anchor: PurePath, path: PurePath, flags: int, *, new_mode: int = PRIVATE_FILE, folders: int | None = None
) -> int:
    """``os.open`` of the regular file at ``path`` (never through a link); with ``os.O_CREAT`` in ``flags``, a file
    created here gets exactly ``new_mode`` and missing folders ``folders`` (with ``os.O_EXCL`` too, an existing
    entry is ``FileExistsError``, whatever it is). The caller closes the descriptor."""
    parent, name = _leaf(anchor, path)
    with folder(anchor, parent, make=folders) as held:
        fd = -1
        try:
            if flags & os.O_CREAT:
                try:
                    fd = held.open(name, flags | os.O_EXCL, new_mode)
                    _fix_mode(fd, new_mode)
                except FileExistsError:
                    if flags & os.O_EXCL:
                        raise
                    fd = held.open(name, flags & ~os.O_CREAT)
            else:
                fd = held.open(name, flags)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise Refused(path, path, "is no longer a regular file")
        except Refused as refused:
            if fd >= 0:
                os.close(fd)
            raise _refused_as(refused, path) from None
        except BaseException:
            if fd >= 0:
                os.close(fd)
            raise
        return fd


def open_read(anchor: PurePath, path: PurePath) -> BinaryIO | None:
    """The regular file at ``path`` open for reading, never through a link; None when it does not exist."""
    try:
        fd = open_fd(anchor, path, os.O_RDONLY | _NONBLOCK | _BINARY)
    except FileNotFoundError:
        return None
    return os.fdopen(fd, "rb")


def write_file(
    anchor: PurePath,
    path: PurePath,
    data: bytes,
    *,
    new_mode: int = PRIVATE_FILE,
    folders: int | None = None,
    durable: bool = True,
    keep_mode: bool = True,
    times_ns: int | None = None,
) -> None:
    """Replace (or create) the regular file at ``path`` with ``data`` whole: a temporary file beside it, written,
    ``fsync``-ed (``durable``), given its mode (the old file's when ``keep_mode`` and there is one, else
    ``new_mode``) and date (``times_ns``), renamed over it, and the folder synced. Missing folders are created with
    mode ``folders`` (None: they must exist). A link or a folder where the file should be is ``Refused``."""
    parent, name = _leaf(anchor, path)
    try:
        with folder(anchor, parent, make=folders) as held:
            write_into(held, name, data, new_mode=new_mode, durable=durable, keep_mode=keep_mode, times_ns=times_ns)
    except Refused as refused:
        raise _refused_as(refused, path) from None


def write_into(
    held: Folder,
    name: str,
    data: bytes,
    *,
    new_mode: int = PRIVATE_FILE,
    durable: bool = True,
    keep_mode: bool = True,
    times_ns: int | None = None,
) -> None:
    """``write_file`` of the entry ``name`` of a folder already reached (``folder``)."""
    now = held.lstat(name)
    mode = new_mode
    if now is not None:
        if not stat.S_ISREG(now.st_mode):
            kind = "a link, and a link is never followed" if stat.S_ISLNK(now.st_mode) else "no longer a regular file"
            component = held.path / name
            raise Refused(component, component, f"is {kind}")
        if keep_mode:
            mode = stat.S_IMODE(now.st_mode)
    temporary = f".{name[:100]}.{secrets.token_hex(6)}.tmp"
    fd = held.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY, PRIVATE_FILE)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            _fix_mode(fd, mode)
            if times_ns is not None and os.utime in os.supports_fd:
                os.utime(fd, ns=(times_ns, times_ns))
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        if times_ns is not None and os.utime not in os.supports_fd:
            held.set_times(temporary, times_ns)
        held.rename(temporary, held, name)
    except BaseException:
        with contextlib.suppress(OSError):
            held.unlink(temporary)
        raise
    if durable:
        held.sync()


def remove_file(anchor: PurePath, path: PurePath) -> bool:
    """Delete the regular file at ``path``; False when there is none. Anything else there (a link, a folder) is
    ``Refused``: only the file an operation knows is ever deleted."""
    parent, name = _leaf(anchor, path)
    try:
        with folder(anchor, parent) as held:
            now = held.lstat(name)
            if now is None:
                return False
            if not stat.S_ISREG(now.st_mode):
                kind = "a link, and a link is never followed" if stat.S_ISLNK(now.st_mode) else "no longer a file"
                raise Refused(path, path, f"is {kind}")
            held.unlink(name)
            return True
    except FileNotFoundError:
        return False
    except Refused as refused:
        raise _refused_as(refused, path) from None


def make_folders(anchor: PurePath, path: PurePath, *, mode: int = PRIVATE_FOLDER) -> None:
    """Create the folders of ``path`` that are missing, each with ``mode``; a link on the way is ``Refused``."""
    with folder(anchor, path, make=mode):
        pass


def rename(anchor: PurePath, source: PurePath, target: PurePath, *, durable: bool = True) -> None:
    """Rename ``source`` to ``target`` (both below ``anchor``; ``target`` replaced if it exists, a link there
    replaced rather than followed)."""
    source_parent, source_name = _leaf(anchor, source)
    target_parent, target_name = _leaf(anchor, target)
    try:
        with folder(anchor, source_parent) as held, folder(anchor, target_parent) as into:
            held.rename(source_name, into, target_name)
            if durable:
                into.sync()
    except Refused as refused:
        raise _refused_as(refused, source) from None


def set_mode(anchor: PurePath, path: PurePath, mode: int) -> bool:
    """Set the permission bits of the file or folder at ``path`` to ``mode`` through a descriptor opened without
    following a link; False when it does not exist or is something else (a link, a socket: left as it is)."""
    facts = lstat(anchor, path)
    if facts is None:
        return False
    if stat.S_ISDIR(facts.st_mode):
        try:
            with folder(anchor, path) as held:
                _set_held_mode(held, mode)
        except FileNotFoundError:
            return False
        return True
    if not stat.S_ISREG(facts.st_mode):
        return False
    try:
        fd = open_fd(anchor, path, os.O_RDONLY | _NONBLOCK | _BINARY)
    except FileNotFoundError:
        return False
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        else:
            os.chmod(path, mode)
    finally:
        os.close(fd)
    return True


def _set_held_mode(held: Folder, mode: int) -> None:
    if sys.platform == "win32" or not isinstance(held, _FdFolder):
        os.chmod(held.path, mode)
    else:
        fd = held.readable()
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)


def _held_mode(held: Folder) -> int:
    return stat.S_IMODE(os.stat(held.fd).st_mode if isinstance(held, _FdFolder) else os.stat(held.path).st_mode)


def entries(anchor: PurePath, path: PurePath, *, depth: int = 1) -> list[PurePath]:
    """What the folder ``path`` holds, and what its sub-folders hold down to ``depth`` levels, never through a link
    (a link is listed, not entered); empty when the folder is missing or refused."""
    found: list[PurePath] = []
    try:
        with folder(anchor, path) as held:
            names = sorted(held.names())
            kinds = {name: held.lstat(name) for name in names}
    except (FileNotFoundError, Refused, NotADirectoryError):
        return found
    for name in names:
        found.append(path / name)
        facts = kinds[name]
        if depth > 1 and facts is not None and stat.S_ISDIR(facts.st_mode):
            found.extend(entries(anchor, path / name, depth=depth - 1))
    return found


def tighten(anchor: PurePath, paths: Sequence[PurePath]) -> list[tuple[PurePath, int]]:
    """Take the group and other permission bits off each of ``paths`` that has some (files and folders, never
    through a link; the anchor itself when it is among them); each path changed, with its mode before. A path that
    cannot be changed (another owner's) is left and skipped."""
    changed: list[tuple[PurePath, int]] = []
    for path in paths:
        try:
            if path == anchor:
                with folder(anchor, anchor) as held:
                    before = _held_mode(held)
                    if before & 0o077:
                        _set_held_mode(held, before & ~0o077)
                        changed.append((path, before))
                continue
            facts = lstat(anchor, path)
            if facts is None or not (stat.S_ISREG(facts.st_mode) or stat.S_ISDIR(facts.st_mode)):
                continue
            before = stat.S_IMODE(facts.st_mode)
            if before & 0o077 and set_mode(anchor, path, before & ~0o077):
                changed.append((path, before))
        except OSError:  # a link (Refused), another owner's file, a read-only file system: left as it is
            continue
    return changed
