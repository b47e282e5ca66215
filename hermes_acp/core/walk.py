"""The one file-tree walker: depth first, symlinks never followed, unreadable folders skipped, no depth or count cap.

``walk(root, context, enter)`` yields every entry under ``root`` with the context of the folder it is in; a folder
is entered when ``enter(entry, context)`` gives a context for it (None: not entered), right after the folder itself
was yielded, so the order is a pre-order (``a``, ``a/x``, ``b``), by name when ``ordered``. It is a loop with a
stack of listings, never a recursion, so a deep tree cannot exhaust the interpreter's stack; each listing is one
``os.scandir`` (the entry types come with it: no ``stat`` per entry). The file tools' Python engine (``.gitignore``
rules as the context) and the sandbox's scan of the session's directories (secrets, repositories) both walk with it.

Blocking I/O: callers run it in a worker thread; ``cancelled()`` is checked before each folder is listed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TypeVar

__all__ = ["folder_entries", "walk"]

C = TypeVar("C")


def folder_entries(folder: str, *, ordered: bool = False) -> list[os.DirEntry[str]] | None:
    """The entries of one folder (by name when ``ordered``); None when it cannot be listed."""
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError:
        return None
    if ordered:
        entries.sort(key=lambda entry: entry.name)
    return entries


def walk(
    root: str,
    context: C,
    enter: Callable[[os.DirEntry[str], C], C | None],
    *,
    ordered: bool = False,
    cancelled: Callable[[], bool] = lambda: False,
) -> Iterator[tuple[os.DirEntry[str], C]]:
    """Every entry under ``root`` with its folder's context (see the module docstring)."""
    if cancelled():
        return
    first = folder_entries(root, ordered=ordered)
    if first is None:
        return
    stack: list[tuple[Iterator[os.DirEntry[str]], C]] = [(iter(first), context)]
    while stack:
        entries, here = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        yield entry, here
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if not is_dir:
            continue
        inner = enter(entry, here)
        if inner is None:
            continue
        if cancelled():
            return
        listed = folder_entries(entry.path, ordered=ordered)
        if listed is not None:
            stack.append((iter(listed), inner))
