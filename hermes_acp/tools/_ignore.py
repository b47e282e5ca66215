"""Gitignore-style patterns: ``.gitignore`` rules and the file globs of ``list_files`` / ``search_files``.

pathspec (``GitIgnoreSpec``) reads each line (git's syntax: ``#`` comments, ``!`` negation, ``\\`` escapes,
trailing spaces, a trailing ``/`` for folders only, ``*`` / ``?`` / ``[...]`` within one path part, ``**`` across
parts). Its answer for a path also counts the folders above it (a folder's pattern covers what it holds); the
walkers ask about every path on the way down and never enter an ignored folder, as git and ripgrep do, so here a
pattern is asked about the path itself, by git's three cases:

- no ``/`` but at the end (``*.log``, ``build/``; a leading ``**/`` changes nothing): the path's last part, at any
  depth;
- a trailing ``/**`` (``docs/**``): everything inside that folder, not the folder;
- any other ``/`` (``/top``, ``a/*/c``, ``a/**/b``): the whole path, from the rules' folder.

A deeper ``.gitignore`` outranks a shallower one (the walker's business); within one file the last matching line
wins. A line pathspec cannot read is skipped, as ripgrep skips it. This module only matches relative POSIX paths;
it does no I/O and knows nothing about walking folders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import RegexPattern

__all__ = ["GlobPattern", "IgnoreRules", "Verdict", "compile_pattern"]

Verdict = bool | None
"""True: ignored; False: explicitly kept (a ``!`` rule); None: no rule matched."""


@dataclass(frozen=True, slots=True)
class GlobPattern:
    """One pattern line, compiled by pathspec, and how it applies to a path (the cases of the module docstring)."""

    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    by_name: bool
    contents: bool

    def matches(self, relative: str, *, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        if self.by_name:
            name = relative.rpartition("/")[2]
            return self.regex.search(name + "/" if is_dir else name) is not None
        if self.contents:
            return self.regex.search(relative) is not None
        return self.regex.fullmatch(relative + "/" if is_dir else relative) is not None


def compile_pattern(line: str) -> GlobPattern | None:
    """One ``.gitignore`` line (or one glob) as a pattern; None for blanks, comments and lines pathspec rejects."""
    from pathspec import GitIgnoreSpec  # loaded by the first walk, not with the tools

    line = line.rstrip("\r")
    try:
        patterns = GitIgnoreSpec.from_lines([line]).patterns if line else []
    except ValueError:
        return None
    return _applied(line, patterns[0]) if patterns else None


def _applied(line: str, compiled: RegexPattern) -> GlobPattern | None:
    """The compiled line with the case of the module docstring it falls in."""
    if compiled.include is None or compiled.regex is None:
        return None
    body = line.strip()
    negated = body.startswith("!")
    body = body.removeprefix("!")
    dir_only = body.endswith("/")
    body = body.rstrip("/")
    by_name = "/" not in body.removeprefix("**/")
    return GlobPattern(
        regex=compiled.regex,
        negated=negated,
        dir_only=dir_only,
        by_name=by_name,
        contents=not by_name and body.endswith("/**"),
    )


@dataclass(frozen=True, slots=True)
class IgnoreRules:
    """The patterns of one ``.gitignore`` file, in file order."""

    patterns: tuple[GlobPattern, ...]

    @classmethod
    def parse(cls, text: str) -> IgnoreRules:
        lines = [line.rstrip("\r") for line in text.split("\n")]
        lines = [line for line in lines if line]
        from pathspec import GitIgnoreSpec

        try:
            compiled = [
                _applied(line, p) for line, p in zip(lines, GitIgnoreSpec.from_lines(lines).patterns, strict=True)
            ]
        except ValueError:  # a line pathspec rejects: compile them one by one, skipping it
            compiled = [compile_pattern(line) for line in lines]
        return cls(tuple(p for p in compiled if p is not None))

    def verdict(self, relative: str, *, is_dir: bool) -> Verdict:
        """The last matching line decides."""
        for pattern in reversed(self.patterns):
            if pattern.matches(relative, is_dir=is_dir):
                return not pattern.negated
        return None
