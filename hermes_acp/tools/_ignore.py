"""Gitignore-style patterns: ``.gitignore`` rules and the file globs of ``list_files`` / ``search_files``.

The rules follow git's documented semantics, which ripgrep also implements, so the pure-Python walker and ripgrep
agree on what is ignored: ``#`` comments, ``!`` negation, ``\\`` escapes, trailing spaces dropped unless escaped, a
trailing ``/`` for directories only, a ``/`` at the start or in the middle anchors a pattern to its file's folder,
``*`` / ``?`` / ``[...]`` never cross a ``/``, and ``**`` spans folders in ``**/x``, ``x/**`` and ``a/**/b``. A
deeper ``.gitignore`` outranks a shallower one; within one file the last matching line wins.

This module only matches relative POSIX paths; it does no I/O and knows nothing about walking folders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["GlobPattern", "IgnoreRules", "Verdict", "compile_pattern"]

Verdict = bool | None
"""True: ignored; False: explicitly kept (a ``!`` rule); None: no rule matched."""


@dataclass(frozen=True, slots=True)
class GlobPattern:
    """One compiled pattern line."""

    regex: re.Pattern[str]
    negated: bool
    dir_only: bool

    def matches(self, relative: str, *, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        return self.regex.fullmatch(relative) is not None


def _strip_trailing_spaces(line: str) -> str:
    """Trailing spaces go unless the last one is escaped with a backslash."""
    end = len(line)
    while end > 0 and line[end - 1] == " ":
        backslashes = 0
        index = end - 2
        while index >= 0 and line[index] == "\\":
            backslashes += 1
            index -= 1
        if backslashes % 2 == 1:
            break
        end -= 1
    return line[:end]


def _char_class(pattern: str, start: int) -> tuple[str, int] | None:
    """``[...]`` at ``start``: its regex and the index after it, or None when it never closes (a literal ``[``)."""
    index = start + 1
    negate = False
    if index < len(pattern) and pattern[index] in "!^":
        negate = True
        index += 1
    body: list[str] = []
    first = True
    while index < len(pattern):
        char = pattern[index]
        if char == "]" and not first:
            inner = "".join(body)
            return (f"[^/{inner}]" if negate else f"[{inner}]"), index + 1
        if char == "\\" and index + 1 < len(pattern):
            index += 1
            body.append(re.escape(pattern[index]))
        elif char == "-" and body and index + 1 < len(pattern) and pattern[index + 1] != "]":
            body.append("-")
        else:
            body.append("\\" + char if char in "\\^[]" else char)
        first = False
        index += 1
    return None


def _translate(pattern: str) -> str:
    """A glob body (no ``!``, no trailing ``/``) as a regex over a relative POSIX path."""
    out: list[str] = []
    index = 0
    length = len(pattern)
    while index < length:
        char = pattern[index]
        if char == "*":
            if pattern.startswith("**", index):
                at_start = index == 0 or pattern[index - 1] == "/"
                after = index + 2
                if at_start and after == length:
                    out.append(".*")
                    index = after
                    continue
                if at_start and after < length and pattern[after] == "/":
                    out.append("(?:.*/)?")
                    index = after + 1
                    continue
                # Any other run of asterisks is an ordinary "*".
                while index < length and pattern[index] == "*":
                    index += 1
                out.append("[^/]*")
                continue
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            translated = _char_class(pattern, index)
            if translated is None:
                out.append(re.escape(char))
            else:
                out.append(translated[0])
                index = translated[1]
                continue
        elif char == "\\" and index + 1 < length:
            index += 1
            out.append(re.escape(pattern[index]))
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def compile_pattern(line: str) -> GlobPattern | None:
    """One ``.gitignore`` line (or one glob) as a pattern; None for blanks, comments and empty negations."""
    line = line.rstrip("\n").rstrip("\r")
    if not line or line.startswith("#"):
        return None
    line = _strip_trailing_spaces(line)
    negated = False
    if line.startswith("!"):
        negated = True
        line = line[1:]
    elif line.startswith(("\\!", "\\#")):
        line = line[1:]
    dir_only = False
    if line.endswith("/") and not line.endswith("\\/"):
        dir_only = True
        line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.removeprefix("/")
    if not line:
        return None
    body = _translate(line)
    regex = body if anchored else f"(?:.*/)?{body}"
    try:
        compiled = re.compile(regex, re.DOTALL)
    except re.error:
        return None
    return GlobPattern(regex=compiled, negated=negated, dir_only=dir_only)


@dataclass(frozen=True, slots=True)
class IgnoreRules:
    """The patterns of one ``.gitignore`` file, in file order."""

    patterns: tuple[GlobPattern, ...]

    @classmethod
    def parse(cls, text: str) -> IgnoreRules:
        compiled = (compile_pattern(line) for line in text.split("\n"))
        return cls(tuple(p for p in compiled if p is not None))

    def verdict(self, relative: str, *, is_dir: bool) -> Verdict:
        """The last matching line decides."""
        for pattern in reversed(self.patterns):
            if pattern.matches(relative, is_dir=is_dir):
                return not pattern.negated
        return None
