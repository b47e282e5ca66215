"""The file system's case rule for policy decisions: names are compared folded, on every operating system.

APFS and NTFS are case-insensitive by default, and a Linux user can mount such a volume (vfat, exFAT, a case-folding
ext4 folder, drvfs under WSL), so ``.GIT/hooks/pre-commit``, ``.ENV``, ``Id_RSA`` and ``server.PEM`` are the real
files on one machine and lookalikes on another. Every policy decision (sensitive paths, the sandbox's masks, the
protection of ``.git``) compares names through ``fold``, so a decision never depends on the volume. Folding is NFC
then ``casefold`` (``ß`` and ``SS``, composed and decomposed accents); Windows also ignores trailing dots and spaces
of a name and reads ``name:stream`` as ``name`` (NTFS alternate data streams: ``.env::$DATA`` is ``.env``), which
``fold`` drops on every OS too: a name that only differs by them is treated as the name.

Pure functions; no I/O. Knows nothing about what is secret (``exec.secrets`` and ``tools.policy`` decide).
"""

from __future__ import annotations

import functools
import unicodedata

__all__ = ["fold", "fold_parts", "same_name"]


@functools.lru_cache(maxsize=4096)
def fold(name: str) -> str:
    """The name as a case-insensitive volume compares it (see the module docstring)."""
    stream = name.find(":")
    if stream > 0:
        name = name[:stream]
    name = name.rstrip(". ") or name
    return unicodedata.normalize("NFC", name).casefold()


def fold_parts(parts: tuple[str, ...]) -> tuple[str, ...]:
    """Each component of a path, folded."""
    return tuple(fold(part) for part in parts)


def same_name(a: str, b: str) -> bool:
    return fold(a) == fold(b)
