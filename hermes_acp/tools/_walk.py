"""The pure-Python file walker and content search: the fallback when ripgrep is not installed.

It reproduces the ripgrep invocation of ``_ripgrep`` (hidden files included, ``.git`` skipped, symlinks not
followed, ``.gitignore`` files honoured with or without a git repository, the parent folders' ``.gitignore`` up to
the repository root, a glob that selects files even where ``.gitignore`` names them, folders pruned by
``.gitignore`` still skipped) so both engines give the same results; the tests hold them to it. Traversal is in
name order per folder, like ``rg --sort path``. Files over ``MAX_SEARCH_FILE_BYTES`` and files holding a NUL byte
(binary) are not searched.

Everything here is blocking I/O: callers run it in a worker thread, and ``list_files`` / ``search_files`` stop as
soon as their ``cancelled()`` turns true. It knows nothing about tools or the editor.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hermes_acp.core.walk import walk

from ._ignore import GlobPattern, IgnoreRules, compile_pattern

__all__ = [
    "MAX_SEARCH_FILE_BYTES",
    "Entry",
    "FileMatch",
    "FileSelector",
    "decode_line",
    "has_nul",
    "list_dir",
    "list_files",
    "search_files",
    "search_one_file",
]

MAX_SEARCH_FILE_BYTES = 10 * 1024 * 1024
_NUL_CHUNK = 1024 * 1024


@dataclass(frozen=True, slots=True)
class FileMatch:
    """One matching line: absolute path, 1-based line number, the line's text (decoded, without its newline)."""

    path: Path
    line: int
    text: str


@dataclass(frozen=True, slots=True)
class FileSelector:
    """The user's optional glob: a plain glob selects files, a ``!glob`` excludes files and folders."""

    pattern: GlobPattern | None

    @classmethod
    def parse(cls, glob: str | None) -> FileSelector:
        return cls(compile_pattern(glob) if glob else None)

    def decide(self, relative: str, *, is_dir: bool) -> bool | None:
        """True: take it regardless of .gitignore; False: drop it; None: .gitignore decides."""
        pattern = self.pattern
        if pattern is None:
            return None
        if pattern.matches(relative, is_dir=is_dir):
            return not pattern.negated
        if is_dir or pattern.negated:
            return None
        return False


def _read_rules(folder: Path) -> IgnoreRules | None:
    try:
        text = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    rules = IgnoreRules.parse(text)
    return rules if rules.patterns else None


def _is_repo_root(folder: Path) -> bool:
    return os.path.lexists(folder / ".git")


def _parent_rules(root: Path) -> list[tuple[str, IgnoreRules]]:
    """``.gitignore`` files above ``root``, shallowest first, up to the enclosing repository's root."""
    if _is_repo_root(root):
        return []
    chain: list[tuple[str, IgnoreRules]] = []
    current = root.parent
    while True:
        rules = _read_rules(current)
        if rules is not None:
            chain.append((str(current), rules))
        if _is_repo_root(current) or current.parent == current:
            break
        current = current.parent
    chain.reverse()
    return chain


def _relative(path: str, base: str) -> str:
    return path[len(base) :].lstrip("/")


def _ignored(path: str, is_dir: bool, stack: list[tuple[str, IgnoreRules]]) -> bool:
    for base, rules in reversed(stack):
        verdict = rules.verdict(_relative(path, base), is_dir=is_dir)
        if verdict is not None:
            return verdict
    return False


def _rules_for(folder: Path) -> list[tuple[str, IgnoreRules]]:
    """The ``.gitignore`` rules in force in ``folder``: its parents' (up to the repository root) and its own."""
    stack = _parent_rules(folder)
    own = _read_rules(folder)
    if own is not None:
        stack.append((str(folder), own))
    return stack


def _walk(root: Path, selector: FileSelector, cancelled: Callable[[], bool]) -> Iterator[Path]:
    """Every file under ``root`` that the engines consider, in traversal order, until ``cancelled()``: the one
    walker (``core.walk``) with the ``.gitignore`` rules in force as each folder's context."""
    root_text = str(root)

    def enter(entry: os.DirEntry[str], stack: list[tuple[str, IgnoreRules]]) -> list[tuple[str, IgnoreRules]] | None:
        if entry.name == ".git":
            return None
        chosen = selector.decide(_relative(entry.path, root_text), is_dir=True)
        if chosen is False or (chosen is None and _ignored(entry.path, True, stack)):
            return None
        sub = Path(entry.path)
        # A nested repository starts afresh: the outer .gitignore files do not reach into it.
        inner = [] if _is_repo_root(sub) else list(stack)
        rules = _read_rules(sub)
        if rules is not None:
            inner.append((entry.path, rules))
        return inner

    for entry, stack in walk(root_text, _rules_for(root), enter, ordered=True, cancelled=cancelled):
        try:
            if entry.name == ".git" or not entry.is_file(follow_symlinks=False):
                continue
        except OSError:
            continue
        chosen = selector.decide(_relative(entry.path, root_text), is_dir=False)
        if chosen is False or (chosen is None and _ignored(entry.path, False, stack)):
            continue
        yield Path(entry.path)


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of a folder listing."""

    name: str
    kind: Literal["dir", "file", "link", "other"]
    size: int = 0
    target: str | None = None


def list_dir(folder: Path) -> tuple[list[Entry], int]:
    """The folder's entries in name order (``.git`` left out) and how many ``.gitignore`` hides."""
    stack = _rules_for(folder)
    entries: list[Entry] = []
    hidden = 0
    with os.scandir(folder) as listing:
        items = sorted(listing, key=lambda e: e.name)
    for item in items:
        if item.name == ".git":
            continue
        try:
            if item.is_symlink():
                entry = Entry(item.name, "link", target=os.readlink(item.path))
            elif item.is_dir(follow_symlinks=False):
                entry = Entry(item.name, "dir")
            elif item.is_file(follow_symlinks=False):
                entry = Entry(item.name, "file", size=item.stat(follow_symlinks=False).st_size)
            else:
                entry = Entry(item.name, "other")
        except OSError:
            continue
        if _ignored(item.path, entry.kind == "dir", stack):
            hidden += 1
            continue
        entries.append(entry)
    return entries, hidden


def list_files(
    root: Path, glob: str | None, *, cap: int, cancelled: Callable[[], bool] = lambda: False
) -> tuple[list[Path], bool]:
    """Up to ``cap`` files under ``root`` (traversal order) and whether more exist."""
    found: list[Path] = []
    for path in _walk(root, FileSelector.parse(glob), cancelled):
        if cancelled():
            break
        if len(found) == cap:
            return found, True
        found.append(path)
    return found, False


def has_nul(path: Path) -> bool:
    """True when the file holds a NUL byte anywhere (what both engines treat as binary)."""
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(_NUL_CHUNK):
                if b"\0" in chunk:
                    return True
    except OSError:
        return True
    return False


def decode_line(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def search_one_file(path: Path, regex: re.Pattern[str], *, room: int) -> list[FileMatch]:
    """Matching lines of one text file (none for binary, unreadable or oversized files), at most ``room``."""
    try:
        if path.stat().st_size > MAX_SEARCH_FILE_BYTES:
            return []
        data = path.read_bytes()
    except OSError:
        return []
    if b"\0" in data:
        return []
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out: list[FileMatch] = []
    for number, raw in enumerate(lines, start=1):
        text = decode_line(raw)
        if regex.search(text) is not None:
            out.append(FileMatch(path=path, line=number, text=text))
            if len(out) >= room:
                break
    return out


def search_files(
    root: Path,
    regex: re.Pattern[str],
    glob: str | None,
    *,
    cap: int,
    cancelled: Callable[[], bool] = lambda: False,
) -> tuple[list[FileMatch], bool]:
    """Up to ``cap`` matches under ``root`` (traversal order) and whether more exist."""
    found: list[FileMatch] = []
    for path in _walk(root, FileSelector.parse(glob), cancelled):
        if cancelled():
            break
        found.extend(search_one_file(path, regex, room=cap + 1 - len(found)))
        if len(found) > cap:
            return found[:cap], True
    return found, False
