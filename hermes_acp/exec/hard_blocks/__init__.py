"""Commands refused in every mode, without asking: the few that wreck a machine, run code from the network, or are
never needed in a coding session. ``check_command(command)`` reads the command as bash will and says whether it is
refused (and why), or cannot be read at all (then it is asked, never passed).

Refused:

- ``rm`` recursive (any spelling: ``-rf``, ``-r -f``, ``-Rf``, ``--recursive``, ``--recur``) on ``/``, ``/*``, a
  glob or brace expansion at the root, a top-level system folder, ``~`` or ``$HOME`` or a folder above it, also
  relative to where the command line went (``cd / && rm -rf *``); ``--no-preserve-root``;
- ``find`` on those with ``-delete`` or ``-exec rm``; ``chmod`` / ``chown`` / ``chgrp`` recursive on them;
- downloads executed: ``curl … | sh`` (through any stages, into any interpreter), ``bash <(curl …)``,
  ``sh -c "$(curl …)"``, ``eval "$(wget …)"``, ``python3 <<< "$(curl …)"``, ``$(curl …)`` as a command, and
  ``curl -o x.sh …; bash x.sh`` (a downloaded file run later in the same command);
- writes onto a disk device: ``dd of=``, ``tee``, ``cp``, ``shred``, ``blkdiscard`` or any output redirection
  (``cat … > /dev/sda``) onto ``/dev/sd*``, ``/dev/nvme*``, ``/dev/disk/by-id/…`` and the like;
- ``mkfs*``, ``mke2fs``, ``mkswap``, ``wipefs``; ``shutdown``, ``reboot``, ``poweroff``, ``halt`` (also through
  ``systemctl``, ``loginctl``, ``init 0|6``), writes to ``/proc/sysrq-trigger``;
- fork bombs: a function that starts itself twice in a pipeline or in the background (``:(){ :|:& };:`` under any
  name).

How, module by module: ``syntax`` parses the command with tree-sitter's bash grammar (the only module that imports
it); ``walk`` goes over the tree and finds every simple command bash would run, with its words expanded by
``expand`` (the grammar's word nodes, in the context of the command line) through ``words`` and ``braces`` (text);
it looks through wrappers and follows code handed to shells and interpreters (``programs``), and applies the
``rules``. When the grammar rejects the text (unbalanced quotes, an unfinished here-document), ``fallback`` splits
it as ``shlex`` does and the same rules run: a refusal found there stands; otherwise the command is in doubt and
must be asked. The same words inside quotes or file names (``echo "rm -rf /"``, ``grep reboot log``) are not
refused.

A check does bounded work (``budget``: a few hundred ms at most), whatever the command: one built to be
expensive (loops inside loops, brace expansions of thousands of words, deep nesting) is read by the fallback, whose
refusals stand, and is otherwise in doubt. A caller on an event loop runs the check in a worker thread (the first
one also loads the grammar).

This is the first line, not the boundary: commands run in the sandbox (``exec.sandbox``). It does no I/O and
knows nothing about modes or approval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import walk
from .rules import Refused

if TYPE_CHECKING:
    from hermes_acp.platform.shells import Grammar

__all__ = ["CommandCheck", "check_command", "hard_block_reason"]


@dataclass(frozen=True, slots=True)
class CommandCheck:
    """What the hard blocks make of a command: refused (``blocked``), unreadable (``doubt``: ask), or neither."""

    blocked: str | None = None
    doubt: str | None = None


def check_command(command: str, grammar: Grammar = "bash") -> CommandCheck:
    """Whether ``command`` is refused in every mode (and why), or cannot be read and must be asked. ``grammar``:
    the shell that runs it (PowerShell and cmd get the first line of ``windows``)."""
    if grammar in ("powershell", "cmd"):
        from .windows import windows_block_reason

        reason = windows_block_reason(command)
        return CommandCheck(blocked=reason)
    try:
        return CommandCheck(doubt=walk.check(command))
    except Refused as refused:
        return CommandCheck(blocked=refused.reason)


def hard_block_reason(command: str) -> str | None:
    """Why ``command`` is refused in every mode, or None when it is not."""
    return check_command(command).blocked
