"""Which engine finds files and matches: ripgrep when it is installed, else the pure-Python walker.

Both answer the same questions with the same results (``_ripgrep`` and ``_walk`` say how); this module only picks
one, falls back to Python when ripgrep fails (a regex only Python accepts, a crash), drops files holding NUL bytes
from ripgrep's answer the way the walker skips them, and bounds every call by ``timeout_s``. ripgrep running past it
is a ``ToolTimeoutError`` that says to narrow the path or the glob (the walker would be slower still, so it does not
take over); the walker running past it stops and answers what it found with ``stopped_early`` set. The walker's
worker thread never outlives the call, cancelled or not. It knows nothing about tool arguments or output formats.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Generic, Literal, NamedTuple, TypeVar

import anyio
import structlog

from hermes_acp.errors import ToolTimeoutError

from . import _walk
from ._ripgrep import RipgrepError, RipgrepTimeout, find_ripgrep, rg_list_files, rg_search
from ._walk import FileMatch

__all__ = ["AUTO", "SEARCH_TIMEOUT_S", "Finder", "Found", "RipgrepChoice"]

AUTO: Literal["auto"] = "auto"
RipgrepChoice = str | None | Literal["auto"]
"""A path to ``rg``, None for the Python walker, or ``auto``: ``rg`` from PATH when there is one."""
SEARCH_TIMEOUT_S = 60.0
"""How long one listing or search may run, whichever engine runs it."""

_log = structlog.get_logger("hermes_acp.tools")
T = TypeVar("T")


class Found(NamedTuple, Generic[T]):
    """Up to ``cap`` results in traversal order; ``more``: others exist; ``stopped_early``: the walk hit the limit."""

    items: list[T]
    more: bool
    stopped_early: bool = False


async def _in_thread(work: Callable[[Callable[[], bool]], tuple[list[T], bool]], timeout_s: float) -> Found[T]:
    """Run blocking ``work(cancelled)`` in a worker thread; ``cancelled()`` turns true when the caller is cancelled
    or ``timeout_s`` has passed, and the thread then stops early."""
    stop = threading.Event()
    deadline = time.monotonic() + timeout_s
    expired = False

    def cancelled() -> bool:
        nonlocal expired
        if not expired and time.monotonic() >= deadline:
            expired = True
        return expired or stop.is_set()

    try:
        items, more = await anyio.to_thread.run_sync(work, cancelled, abandon_on_cancel=True)
    finally:
        stop.set()
    return Found(items, more, stopped_early=expired)


def _timed_out(exc: RipgrepTimeout) -> ToolTimeoutError:
    return ToolTimeoutError(
        f"the search did not finish within {exc.timeout_s:g} s and was stopped;"
        " search a narrower path or restrict it with a glob"
    )


class Finder:
    def __init__(self, ripgrep: RipgrepChoice = AUTO, *, timeout_s: float = SEARCH_TIMEOUT_S):
        self._ripgrep = ripgrep
        self.timeout_s = timeout_s
        self.last_engine: Literal["ripgrep", "python"] | None = None
        """Which engine answered the latest call (for diagnostics and tests)."""

    @property
    def ripgrep(self) -> str | None:
        return find_ripgrep() if self._ripgrep == AUTO else self._ripgrep

    async def files(self, root: Path, glob: str | None, *, cap: int) -> Found[Path]:
        rg = self.ripgrep
        if rg is not None:
            try:
                listed, more = await rg_list_files(rg, root, glob, cap=cap, timeout_s=self.timeout_s)
            except RipgrepTimeout as exc:
                raise _timed_out(exc) from exc
            except RipgrepError as exc:
                _log.info("ripgrep failed; using the Python walker", error=str(exc))
            else:
                self.last_engine = "ripgrep"
                return Found(listed, more)
        self.last_engine = "python"
        return await _in_thread(
            lambda cancelled: _walk.list_files(root, glob, cap=cap, cancelled=cancelled), self.timeout_s
        )

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
    ) -> Found[FileMatch]:
        rg = self.ripgrep
        if rg is not None:
            try:
                found, more = await rg_search(
                    rg,
                    root,
                    pattern,
                    literal=literal,
                    ignore_case=ignore_case,
                    glob=glob,
                    cap=cap,
                    timeout_s=self.timeout_s,
                )
            except RipgrepTimeout as exc:
                raise _timed_out(exc) from exc
            except RipgrepError as exc:
                _log.info("ripgrep failed; using the Python walker", error=str(exc))
            else:
                self.last_engine = "ripgrep"
                return Found(await _without_binary(found), more)
        self.last_engine = "python"
        return await _in_thread(
            lambda cancelled: _walk.search_files(root, regex, glob, cap=cap, cancelled=cancelled), self.timeout_s
        )


async def _without_binary(found: list[FileMatch]) -> list[FileMatch]:
    """ripgrep may report lines of a file before a late NUL byte; the walker skips such files whole."""
    paths = sorted({m.path for m in found})
    binary = await anyio.to_thread.run_sync(partial(_binary_paths, paths))
    return [m for m in found if m.path not in binary]


def _binary_paths(paths: list[Path]) -> set[Path]:
    return {p for p in paths if _walk.has_nul(p)}
