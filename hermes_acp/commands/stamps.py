"""``stamp``: a cheap picture of the folders a session's prompt files and skills are read from, so that they are read
again only when it changed.

For each folder: its inode and modification time, and for each entry (hidden ones left out, at most ``limit``, by
name) its name and the inode, size and modification time of the entry itself or of a file inside it (``member``: a
skill's ``SKILL.md``). An added, removed, renamed or edited file changes the stamp; reading the files is left to
their loaders (``prompt_files``, ``skills``), which know what a file may hold. Blocking: a worker thread calls it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["Stamp", "stamp"]

Stamp = tuple[object, ...]


def stamp(folders: Sequence[Path], *, member: str | None = None, limit: int) -> Stamp:
    return tuple(_folder(folder, member, limit) for folder in folders)


def _folder(folder: Path, member: str | None, limit: int) -> object:
    try:
        found = os.stat(folder)
        with os.scandir(folder) as listing:
            names = sorted(entry.name for entry in listing if not entry.name.startswith("."))
    except OSError:
        return (str(folder), None)
    entries: list[tuple[object, ...]] = []
    for name in names[:limit]:
        path = os.path.join(folder, name, member) if member is not None else os.path.join(folder, name)
        try:
            entry = os.stat(path)
        except OSError:
            entries.append((name, None))
            continue
        entries.append((name, entry.st_ino, entry.st_size, entry.st_mtime_ns))
    return (str(folder), found.st_ino, found.st_mtime_ns, len(names), tuple(entries))
