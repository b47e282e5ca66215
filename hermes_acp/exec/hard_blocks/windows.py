"""The first line of hard blocks for PowerShell and cmd: the destructive forms, read as patterns over the command.

There is no PowerShell or cmd grammar here (the bash rules parse; these only match), so this is a first line, not
the bash rules' reading: recursive removal of a drive's root, the Windows folder or the user's profile (``Remove-Item
-Recurse``, its aliases ``rm``, ``ri``, ``del``, ``erase``, ``rd``, ``rmdir``, and cmd's ``rd /s``, ``del /s``),
formatting and partitioning disks (``Format-Volume``, ``format X:``, ``diskpart``, ``Clear-Disk``,
``Initialize-Disk``), opening the execution policy (``Set-ExecutionPolicy Unrestricted|Bypass``), the boot
configuration and shadow copies (``bcdedit``, ``vssadmin delete shadows``, ``wbadmin delete``), wiping free space
(``cipher /w``), deleting machine registry keys (``reg delete HKLM``) and stopping the machine. Every command asks
on Windows anyway (there is no sandbox); these are refused in every mode. Case-insensitive, as both shells are.
"""

from __future__ import annotations

import re

__all__ = ["windows_block_reason"]

_REMOVERS = r"(?:remove-item|rm|ri|del|erase|rd|rmdir)"
_PRECIOUS = (
    r"(?:[a-z]:[\\/]?(?:windows|users)?[\\/]?|[\\/]|~[\\/]?|\$home[\\/]?|\$env:(?:userprofile|systemroot|windir|systemdrive)"
    r"[\\/]?|%(?:userprofile|systemroot|windir|systemdrive)%[\\/]?)"
)
_TARGET_END = r"(?=[\s;|&\"')]|$)"
_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), reason)
    for pattern, reason in (
        (
            rf"\b{_REMOVERS}\b(?=[^;|&\n]*(?:\s-r(?:ecurse)?\b|\s/s\b))[^;|&\n]*?\s[\"']?{_PRECIOUS}[\"']?{_TARGET_END}",
            "recursive removal of a drive, the Windows folder or the user's profile",
        ),
        (r"\b(?:format-volume|clear-disk|initialize-disk|diskpart)\b", "formatting or partitioning a disk"),
        (r"(?:^|[;&|]\s*|\s)format(?:\.com)?\s+[a-z]:", "formatting a drive"),
        (r"\bset-executionpolicy\b[^;|&\n]*\b(?:unrestricted|bypass)\b", "opening PowerShell's execution policy"),
        (r"\bbcdedit\b", "changing the boot configuration"),
        (r"\bvssadmin\b[^;|&\n]*\bdelete\b", "deleting the volume shadow copies"),
        (r"\bwbadmin\b[^;|&\n]*\bdelete\b", "deleting the system's backups"),
        (r"\bcipher\b[^;|&\n]*\s/w", "wiping a drive's free space"),
        (r"\breg(?:\.exe)?\s+delete\s+(?:hklm|hkey_local_machine)\b", "deleting machine registry keys"),
        (r"\b(?:stop-computer|restart-computer)\b", "stopping or restarting the machine"),
        (r"\bshutdown(?:\.exe)?\b[^;|&\n]*\s/[srp]\b", "stopping or restarting the machine"),
    )
)


def windows_block_reason(command: str) -> str | None:
    """Why the PowerShell or cmd ``command`` is refused in every mode, or None."""
    for pattern, reason in _RULES:
        if pattern.search(command):
            return reason
    return None
