"""What is refused, and the reason the model reads: the rules applied to one simple command after expansion.

- ``rm`` recursive (any spelling) on the root, ``/*``, a glob at the root, a top-level system folder, the home
  folder or a folder above it, also relative to a folder the command line went to (``cd / && rm -rf *``);
  ``--no-preserve-root``; ``find`` on those with ``-delete`` or ``-exec rm``; ``chmod`` / ``chown`` /
  ``chgrp`` recursive on them;
- writes onto a disk device (``dd of=``, ``tee``, ``cp``, ``shred``, ``blkdiscard``, ``install``, a redirection),
  or to ``/proc/sysrq-trigger``;
- ``mkfs*`` and other formatters; ``shutdown``, ``reboot``, ``poweroff``, ``halt`` (also through ``systemctl``,
  ``loginctl``, ``init 0|6``).

The walk over the command (``walk``) finds the simple commands and raises ``Refused`` with these reasons, and with
the reasons for what only the whole command shows (``fork_bomb``, ``runs_download``). This module reads expanded
words (with the stand-ins of ``words``) and knows nothing of the grammar.
"""

from __future__ import annotations

import posixpath
import re

from .programs import find_line, program
from .words import HOME, UNKNOWN, shown

__all__ = ["Refused", "fork_bomb", "located", "runs_download", "simple_command", "wiped", "written"]

_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff"})
_SYSTEMCTL_POWER = frozenset({"poweroff", "reboot", "halt", "kexec", "soft-reboot"})
_FORMATTERS = frozenset({"mke2fs", "mkswap", "wipefs", "mkdosfs", "mkntfs", "mkexfatfs", "mkisofs"})
_DEVICE_WRITERS = frozenset({"dd", "tee", "cp", "shred", "blkdiscard", "install"})
_DELETERS = frozenset({"rm", "shred", "unlink", "rmdir"})
_SYSTEM_DIRS = frozenset(
    {
        "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/root",
        "/run", "/sbin", "/srv", "/sys", "/usr", "/usr/local", "/var", "/snap", "/nix",
        "/Applications", "/Library", "/System", "/Users", "/private",
    }
)  # fmt: skip
_DISK = re.compile(
    r"^/dev/(?:(?:sd|hd|vd|xvd)[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|md\d|dm-\d|sr\d|loop\d|nbd\d|zd\d|"
    r"mapper/|disk/|block/|mem$|kmem$|port$|root$)"
)


class Refused(Exception):
    """A command refused in every mode; ``reason`` is what the model reads."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def runs_download(what: str) -> Refused:
    return Refused(f"{what} runs unreviewed code from the network")


def fork_bomb(name: str) -> Refused:
    return Refused(f"the function {name!r} starts two copies of itself: a fork bomb exhausts the machine")


def written(target: str) -> str | None:
    """Why writing to ``target`` is refused, if it is: a disk device, or the kernel's SysRq trigger."""
    if UNKNOWN in target or not target.startswith("/"):
        return None
    path = posixpath.normpath("/" + target.lstrip("/"))
    if _DISK.match(path):
        return f"writing onto the disk device {path} destroys its data"
    if path == "/proc/sysrq-trigger":
        return "writing to /proc/sysrq-trigger can reboot or stop the machine at once"
    return None


def located(target: str, cwd: str | None) -> str:
    """``target`` taken from ``cwd``, when it is relative and the command line tells where it runs (``cd /``)."""
    if cwd is None or not target or target.startswith(("/", HOME)):
        return target
    return posixpath.join(cwd, target)


def wiped(target: str) -> str | None:
    """What a recursive deletion (or chmod) of ``target`` reaches, when that is the root, a system folder, the home
    folder or a folder above it."""
    if UNKNOWN in target or not target:
        return None
    if target.startswith(HOME):
        return _from_home(target[1:])
    if not target.startswith("/"):
        return None
    path = "/" + posixpath.normpath("/" + target.lstrip("/")).lstrip("/")
    path, globbed = _unglobbed(path)
    if path == "/":
        return "everything under the root folder" if globbed else "the root folder"
    if path.count("/") == 1 and re.search(r"[*?\[]", path):
        return f"every top-level folder matching {path}"
    if path in _SYSTEM_DIRS:
        return f"the system folder {path}"
    return None


def _unglobbed(path: str) -> tuple[str, bool]:
    """``path`` without trailing ``/*``, ``/.*`` and ``/.`` (a glob of everything in a folder reaches the folder)."""
    globbed = False
    while path not in ("/", "") and re.search(r"(?:^|/)(?:\*|\.\*|\.)$", path):
        path = path.rsplit("/", 1)[0] if "/" in path else ""
        path = path or "/"
        globbed = True
    return path, globbed


def _from_home(rest: str) -> str | None:
    """What a path below the home folder (``rest`` after ``~``) reaches: the home folder itself (``~``, ``~/*``,
    ``~/x/..``), or one above it (``~/..``: every home, or the root)."""
    parts = [part for part in posixpath.normpath("." + rest).split("/") if part != "."]
    while parts and parts[-1] in ("*", ".*"):
        parts.pop()
    if not parts:
        return "the home folder"
    return "a folder above the home folder" if all(part == ".." for part in parts) else None


def simple_command(name: str, texts: list[str], cwd: str | None = None) -> str | None:
    """Why the program ``name`` run with the words ``texts`` is refused, if it is (``cwd``: where it runs, when the
    command line tells)."""
    if name == "rm":
        return _rm(texts, cwd)
    if name == "find":
        return _find(texts, cwd)
    if name in ("chmod", "chown", "chgrp"):
        return _recursive_owner(name, texts, cwd)
    if name.startswith("mkfs") or name in _FORMATTERS:
        return f"{name} formats a disk"
    if name in _DEVICE_WRITERS:
        return _device_writer(name, texts)
    if name in _POWER:
        return f"{name} stops the machine"
    if name in ("systemctl", "loginctl") and any(t in _SYSTEMCTL_POWER for t in texts):
        return f"{name} power actions stop the machine"
    if name in ("init", "telinit") and texts[:1] in (["0"], ["6"]):
        return f"{name} {texts[0]} stops the machine"
    return None


def _rm(texts: list[str], cwd: str | None) -> str | None:
    recursive = False
    targets: list[str] = []
    options_done = False
    for word in texts:
        if options_done or not word.startswith("-") or word == "-":
            targets.append(word)
        elif word == "--":
            options_done = True
        elif word.startswith("--"):
            option = word[2:].split("=", 1)[0]
            if option and "no-preserve-root".startswith(option) and option[0] == "n":
                return "rm with --no-preserve-root deletes the whole file system"
            if option and "recursive".startswith(option):
                recursive = True
        elif "r" in word or "R" in word:
            recursive = True
    if not recursive:
        return None
    for target in (located(t, cwd) for t in targets):
        what = wiped(target)
        if what is not None:
            return f"rm -r of {what} ({shown(target)}) destroys it"
    return None


def _find(texts: list[str], cwd: str | None) -> str | None:
    line = find_line(texts)
    reach = next((w for w in (wiped(located(p, cwd)) for p in line.paths or ["."]) if w is not None), None)
    if reach is None:
        return None
    deleter = next((program(inner[0]) for inner in line.executes if program(inner[0]) in _DELETERS), None)
    if deleter is not None:
        return f"find on {reach} with -exec {deleter} destroys it"
    if line.deletes:
        return f"find on {reach} with -delete destroys it"
    return None


def _recursive_owner(name: str, texts: list[str], cwd: str | None) -> str | None:
    flags = [t for t in texts if t.startswith("-")]
    if not any(t in ("--recursive", "-R") or (not t.startswith("--") and "R" in t) for t in flags):
        return None
    for target in (located(t, cwd) for t in texts if not t.startswith("-")):
        what = wiped(target)
        if what is not None:
            return f"{name} -R on {what} ({shown(target)}) breaks the system"
    return None


def _device_writer(name: str, texts: list[str]) -> str | None:
    if name == "dd":
        targets = [t[3:] for t in texts if t.startswith("of=")]
    elif name in ("tee", "shred", "blkdiscard"):
        targets = [t for t in texts if not t.startswith("-")]
    else:
        operands = [t for t in texts if not t.startswith("-")]
        targets = operands[-1:] if len(operands) >= 2 else []
    reason = next(filter(None, map(written, targets)), None)
    return f"{name}: {reason}" if reason is not None else None
