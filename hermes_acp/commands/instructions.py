"""Project instructions: ``AGENTS.md`` (or ``CLAUDE.md``) from the session's directories and the global one, read
once when a session opens, for its system prompt.

Where: ``$HERMES_ACP_HOME`` (the user's own, first), then each session directory (the cwd, then the additional
ones, in order: the most specific last). In each, ``AGENTS.md`` when it exists, else ``CLAUDE.md``. A file is read
only when it resolves (symlinks followed) inside the directory it was found in and is not a sensitive path, so a
hostile repository cannot point its ``AGENTS.md`` at ``~/.ssh/id_rsa``; the same file found twice is read once.

Text is decoded as UTF-8 (undecodable bytes replaced), passes the one sanitizer (hidden characters out, removals
logged) and is capped: each file at ``FILE_CAP_BYTES`` and all of them together at ``TOTAL_CAP_BYTES``, keeping the
beginning; the prompt says what was cut. Reading is blocking I/O, so ``load_instructions`` runs it in a worker
thread. Nothing here knows the system prompt's wording or the protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread
import structlog

from hermes_acp.core.sanitize import sanitize_text
from hermes_acp.tools.context import Workspace

from .contained import NotContained, contained, read_capped

__all__ = ["FILE_CAP_BYTES", "INSTRUCTION_NAMES", "TOTAL_CAP_BYTES", "InstructionFile", "load_instructions"]

INSTRUCTION_NAMES = ("AGENTS.md", "CLAUDE.md")
"""Looked for in this order in each directory; the first that exists is used."""
FILE_CAP_BYTES = 16 * 1024
TOTAL_CAP_BYTES = 32 * 1024
"""About 8k tokens at most, so a small local model keeps room for the work."""
_log = structlog.get_logger("hermes_acp.sessions")


@dataclass(frozen=True, slots=True)
class InstructionFile:
    path: Path
    text: str
    """What goes into the system prompt (sanitized, possibly cut)."""
    size: int
    """The file's size in bytes."""
    cut: int
    """Bytes of the file left out by the caps (0: all of it is in)."""


async def load_instructions(workspace: Workspace, home: Path) -> list[InstructionFile]:
    """The instruction files of a session, global first; read in a worker thread."""
    return await anyio.to_thread.run_sync(_load, [home, *workspace.roots])


def _load(directories: Sequence[Path]) -> list[InstructionFile]:
    found: list[InstructionFile] = []
    seen: set[Path] = set()
    budget = TOTAL_CAP_BYTES
    for directory in directories:
        path = _instruction_path(directory)
        if path is None or path in seen:
            continue
        seen.add(path)
        try:
            data, size = read_capped(path, min(FILE_CAP_BYTES, budget))
        except OSError as exc:
            _log.warning("instruction file not read", path=str(path), error=str(exc))
            continue
        text, removals = sanitize_text(data.decode("utf-8", errors="replace"))
        if removals:
            _log.warning("hidden characters removed from an instruction file", path=str(path), **removals.as_log())
        budget -= len(data)
        found.append(InstructionFile(path=path, text=text, size=size, cut=max(0, size - len(data))))
        if budget <= 0:
            break
    return found


def _instruction_path(directory: Path) -> Path | None:
    """The instruction file of ``directory`` (resolved), if one exists and may be read."""
    for name in INSTRUCTION_NAMES:
        candidate = directory / name
        if not candidate.is_file():
            continue
        try:
            return contained(candidate, directory)
        except NotContained as exc:
            _log.warning("instruction file not read", path=str(candidate), reason=str(exc))
        except OSError:
            pass
        return None
    return None
