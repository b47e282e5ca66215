"""Reading what a repository ships without letting it point elsewhere: a file counts only inside its own folder.

Instruction files, prompt files and skills are found in folders a hostile repository controls, so each file is
resolved (links followed) and read only when it is a regular file that stays inside the folder it was found in and
is not a sensitive path (``.git/``, ``.ssh/``, ``.env*``, private keys: ``tools.policy.is_sensitive``). A project
``AGENTS.md`` that links to ``~/.ssh/id_rsa`` is refused, and so is a skills folder that links out of the session's
directory. ``read_capped`` reads at most a given number of bytes and says how large the file is. Blocking I/O: the
callers run in worker threads. Nothing here knows what the files are for.
"""

from __future__ import annotations

import os
from pathlib import Path

from hermes_acp.tools.policy import is_sensitive

__all__ = ["NotContained", "contained", "read_capped"]


class NotContained(Exception):
    """The file may not be read where it was found; the message says why."""


def contained(candidate: Path, root: Path) -> Path:
    """``candidate`` resolved, when it is a regular file inside ``root`` (resolved too) and not sensitive; raises
    ``NotContained`` or ``OSError``."""
    real_root = root.resolve(strict=True)
    resolved = candidate.resolve(strict=True)
    if not resolved.is_relative_to(real_root):
        raise NotContained(f"it points outside {root}")
    if is_sensitive(resolved.relative_to(real_root)):
        raise NotContained("it is a sensitive path")
    if not resolved.is_file():
        raise NotContained("it is not a regular file")
    return resolved


def read_capped(path: Path, limit: int) -> tuple[bytes, int]:
    """The first ``limit`` bytes of ``path`` and the file's size in bytes."""
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        return handle.read(limit), size
