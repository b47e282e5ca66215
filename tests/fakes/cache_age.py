"""Time passing for the image cache without waiting: its files dated earlier, their order kept, as if they had been
written that long ago (the cache never prunes a file younger than ``GRACE_S``)."""

from __future__ import annotations

import os
from pathlib import Path

from hermes_acp.images.cache import GRACE_S

__all__ = ["age_past_the_grace"]


def age_past_the_grace(folder: Path, *, by_s: float = 2 * GRACE_S) -> None:
    """Every file in ``folder`` (the lock file aside) dated ``by_s`` earlier than it is."""
    shift = int(by_s * 1e9)
    for entry in folder.iterdir():
        if entry.name != ".lock":
            dated = entry.stat(follow_symlinks=False).st_mtime_ns
            os.utime(entry, ns=(dated - shift, dated - shift), follow_symlinks=False)
