"""One command's sandbox as one object: what it sees (the ``View``), whether it has network, its environment, where
it starts. Both renderings read it, the bubblewrap arguments (``bwrap``) and the Seatbelt profile (``seatbelt``), so
a change to the policy changes both; ``sandbox-profile --os`` prints either on any machine.

How each field reads in each rendering:

| policy | bubblewrap | Seatbelt |
|---|---|---|
| ``ro`` | ``--ro-bind P P`` | ``allow file-read* file-map-executable (subpath P)`` |
| ``rw`` | ``--bind P P`` | that, and ``allow file-write* (subpath P)`` |
| ``symlink`` | ``--symlink T P`` | ``allow file-read* (literal P)`` (the link; its target is granted on its own) |
| ``socket`` | ``--bind P P`` | ``allow file-read* file-write* network-outbound (literal P)`` |
| ``frozen`` | ``--ro-bind P P`` | ``deny file-write* (subpath P)`` |
| ``pinned`` | ``--bind P P`` | ``deny file-write-unlink (literal P)`` |
| ``mask_file`` | ``--ro-bind EMPTY P`` | ``deny file-read-data file-write* (literal P)`` |
| ``mask_dir`` | ``--tmpfs P --remount-ro P`` | ``deny file-read* file-write* (subpath P)`` |
| ``tmpfs_home`` | ``--tmpfs HOME`` | no grant; ``HOME`` is the command's own folder |
| ``network`` off | ``--unshare-net`` | no ``network-outbound`` but to allowed Unix sockets |
| ``for_editor`` | ``--new-session`` | ``setsid`` in the launcher; the terminal's devices |

Pure data; knows nothing about how either tool is run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .view import View

__all__ = ["SandboxPolicy"]


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    view: View
    network: bool
    cwd: str
    env: Mapping[str, str] = field(default_factory=dict)
    """The variables set inside (the allow-list and the command's own); each rendering adds its ``TMPDIR``."""
    for_editor: bool = False
    tmp_mib: int = 0
    """The size of bubblewrap's private ``/tmp``, ``/var/tmp`` and home (0: no limit); Seatbelt has no such mount."""
    scratch: str | None = None
    """The command's own folder (Seatbelt: ``HOME`` is ``scratch/home``, ``TMPDIR`` is ``scratch/tmp``)."""
