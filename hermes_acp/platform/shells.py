"""The shell a command string runs in: bash or ``sh`` on POSIX; PowerShell on Windows unless ``[terminal] shell``
names another (``pwsh``, ``powershell``, ``cmd``, ``bash`` or a path such as Git Bash's ``bash.exe``).

On Windows ``bash`` is never taken from ``PATH`` by default: ``C:\\Windows\\System32\\bash.exe`` is the WSL
launcher, which would run the command in another system. PowerShell is ``pwsh`` (PowerShell 7) when found, else
Windows PowerShell by its absolute path; it runs with ``-NoProfile -NonInteractive`` (the user's profile could do
anything) and UTF-8 output, and passes the command's exit status on. ``cmd`` runs with ``/d`` (no AutoRun) and
``/s /c``. ``Shell.grammar`` tells the hard blocks which rules read the command. Knows nothing about sandboxes.
"""

from __future__ import annotations

import ntpath
import os
import shutil
import sys
from dataclasses import dataclass
from typing import Literal

__all__ = ["Grammar", "Shell", "shell_for"]

Grammar = Literal["bash", "posix", "powershell", "cmd"]
_PS_PREFIX = "[Console]::OutputEncoding=[Text.Encoding]::UTF8; "
_PS_SUFFIX = "; if ($LASTEXITCODE) { exit $LASTEXITCODE }"


@dataclass(frozen=True, slots=True)
class Shell:
    path: str
    grammar: Grammar

    def argv(self, command: str) -> list[str]:
        """The command line that runs ``command`` in this shell."""
        match self.grammar:
            case "powershell":
                return [
                    self.path,
                    "-NoLogo",
                    "-NoProfile",
                    "-NonInteractive",
                    "-Command",
                    _PS_PREFIX + command + _PS_SUFFIX,
                ]
            case "cmd":
                return [self.path, "/d", "/s", "/c", command]
            case _:
                return [self.path, "-c", command]


def _grammar_of(path: str) -> Grammar:
    name = ntpath.basename(path).lower().removesuffix(".exe")
    if name in ("pwsh", "powershell"):
        return "powershell"
    if name == "cmd":
        return "cmd"
    return "bash" if name in ("bash", "zsh") else "posix"


def shell_for(configured: str | None = None, environ: dict[str, str] | None = None) -> Shell:
    """The shell for commands: ``configured`` (``[terminal] shell``: a name or a path) when it is found, else this
    system's default. Raises ``FileNotFoundError`` when the configured shell is not there."""
    env = os.environ if environ is None else environ
    if configured:
        found = configured if os.path.isabs(configured) else shutil.which(configured, path=env.get("PATH"))
        if found is None or not os.path.exists(found):
            raise FileNotFoundError(f"[terminal] shell = {configured!r} is not found")
        return Shell(found, _grammar_of(found))
    if sys.platform == "win32":
        pwsh = shutil.which("pwsh", path=env.get("PATH"))
        if pwsh is not None:
            return Shell(pwsh, "powershell")
        root = env.get("SYSTEMROOT") or env.get("SystemRoot") or "C:\\Windows"
        return Shell(ntpath.join(root, "System32", "WindowsPowerShell", "v1.0", "powershell.exe"), "powershell")
    else:
        bash = shutil.which("bash", path=env.get("PATH"))
        if bash is not None:
            return Shell(bash, "bash")
        return Shell("/bin/sh" if os.path.exists("/bin/sh") else shutil.which("sh") or "/bin/sh", "posix")
