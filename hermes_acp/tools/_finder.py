"""Which engine finds files and matches: ripgrep when it is installed, else the pure-Python walker.

Both answer the same questions with the same results (``_ripgrep`` and ``_walk`` say how); this module only picks
one, falls back to Python when ripgrep fails (a regex only Python accepts, a crash), drops files holding NUL bytes
from ripgrep's answer the way the walker skips them, and keeps the Python walker's worker thread from outliving a
cancelled call. It knows nothing about tool arguments or output formats.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Literal, TypeVar

import anyio
import structlog

from . import _walk
from ._ripgrep import RipgrepError, find_ripgrep, rg_list_files, rg_search
from ._walk import FileMatch

__all__ = ["AUTO", "Finder", "RipgrepChoice"]

AUTO: Literal["auto"] = "auto"
RipgrepChoice = str | None | Literal["auto"]
"""A path to ``rg``, None for the Python walker, or ``auto``: ``rg`` from PATH when there is one."""

_log = structlog.get_logger("hermes_acp.tools")
T = TypeVar("T")


async def _in_thread(work: Callable[[Callable[[], bool]], T]) -> T:
    """Run blocking ``work(cancelled)`` in a worker thread; a cancelled caller tells the thread to stop early."""
    stop = threading.Event()
    try:
        return await anyio.to_thread.run_sync(work, stop.is_set, abandon_on_cancel=True)
    finally:
        stop.set()


class Finder:
    def __init__(self, ripgrep: RipgrepChoice = AUTO):
        self._ripgrep = ripgrep
        self.last_engine: Literal["ripgrep", "python"] | None = None
        """Which engine answered the latest call (for diagnostics and tests)."""

    @property
    def ripgrep(self) -> str | None:
        return find_ripgrep() if self._ripgrep == AUTO else self._ripgrep

    async def files(self, root: Path, glob: str | None, *, cap: int) -> tuple[list[Path], bool]:
        rg = self.ripgrep
        if rg is not None:
            try:
                listed = await rg_list_files(rg, root, glob, cap=cap)
            except RipgrepError as exc:
                _log.info("ripgrep failed; using the Python walker", error=str(exc))
            else:
                self.last_engine = "ripgrep"
                return listed
        self.last_engine = "python"
        return await _in_thread(lambda cancelled: _walk.list_files(root, glob, cap=cap, cancelled=cancelled))

    async def search(
        self,
        root: Path,
        pattern: str,
        regex: re.Pattern[str],
        *,
        literal: bool,
        ignore_case: bool,
        glob: str | None,
        cap: int,
    ) -> tuple[list[FileMatch], bool]:
        rg = self.ripgrep
        if rg is not None:
            try:
                found, more = await rg_search(
                    rg, root, pattern, literal=literal, ignore_case=ignore_case, glob=glob, cap=cap
                )
            except RipgrepError as exc:
                _log.info("ripgrep failed; using the Python walker", error=str(exc))
            else:
                self.last_engine = "ripgrep"
                return await _without_binary(found), more
        self.last_engine = "python"
        return await _in_thread(lambda cancelled: _walk.search_files(root, regex, glob, cap=cap, cancelled=cancelled))


async def _without_binary(found: list[FileMatch]) -> list[FileMatch]:
    """ripgrep may report lines of a file before a late NUL byte; the walker skips such files whole."""
    paths = sorted({m.path for m in found})
    binary = await anyio.to_thread.run_sync(partial(_binary_paths, paths))
    return [m for m in found if m.path not in binary]


def _binary_paths(paths: list[Path]) -> set[Path]:
    return {p for p in paths if _walk.has_nul(p)}
