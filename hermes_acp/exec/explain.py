"""Notes for the model when the sandbox or a limit is what stopped a command, so it asks instead of retrying.

``explain`` reads what the command printed and how it ended, and the paths it named (``~/…``, ``$HOME/…``, absolute
paths, the names of masked files, and the paths of "No such file or directory" messages): a path the sandbox hid
gets a note that says so and what the user can add to ``config.toml`` to allow it (``[sandbox] home_read`` for the
home and other folders, ``reveal`` for a file masked as a secret). A write outside the session's directories, a
network the session does not have, git's read-only configuration, a signal to a process outside, and each limit
(processes, CPU, file size, memory) get theirs. Pure: it looks at the file system only through ``View.shows``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from .limits import Limits
from .process import CommandResult, signal_name
from .sandbox import Confined

__all__ = ["explain", "signal_of"]

_WORD_BREAK = re.compile(r"""[\s'"`;|&<>()=,]+""")
_MISSING = re.compile(r"""([^\s:'"`]+): No such file or directory""")
_OFFLINE = ("Could not resolve host", "Network is unreachable", "Temporary failure in name resolution")
_CONFIG = "config.toml"


def explain(
    confined: Confined, command: str, result: CommandResult, *, cwd: str, limits: Limits, home: str | None
) -> list[str]:
    """The notes for the model (empty when nothing of ours stopped the command); ``home``: ``$HOME``."""
    notes: list[str] = []
    output = result.output
    if result.ended_by is not None:
        notes.append(
            f"[Limits: the command was ended: {result.ended_by}. A fork bomb or a runaway loop? Do not run it again;"
            " if a build really needs more processes, ask the user to raise [sandbox.limits] processes.]"
        )
    notes.extend(_limit_notes(confined, command, result, limits))
    view = confined.view
    if not confined.sandboxed or view is None:
        return notes
    read_only = [line for line in output.splitlines() if "Read-only file system" in line]
    if any(".git/" not in line for line in read_only):
        notes.append(
            "[Sandbox: a write outside the session's directories failed (the rest of the file system is read-only;"
            " /tmp and the home are private to each command and empty at its start). Do not try another way around"
            " it: ask the user if it is needed.]"
        )
    by_kind: dict[str, list[str]] = {"masked": [], "hidden": []}
    seen: set[str] = set()
    for shown, path in _named_paths(command, output, cwd=cwd, home=home):
        if path in seen:
            continue
        seen.add(path)
        kind = view.shows(path)
        bucket = "masked" if kind == "masked" else "hidden" if kind == "hidden" and os.path.lexists(path) else None
        if bucket is not None:
            by_kind[bucket].append(shown)
    for name in _masked_names(view.masked, command):
        if name not in by_kind["masked"]:
            by_kind["masked"].append(name)
    if by_kind["masked"]:
        shown = ", ".join(by_kind["masked"])
        notes.append(
            f"[Sandbox: {shown} {'is' if len(by_kind['masked']) == 1 else 'are'} hidden from commands (it reads as"
            " empty): secrets (.env files, private keys, credential files) are masked. If the command really needs"
            f' it, ask the user to allow it in {_CONFIG}: [sandbox] reveal = ["<file>"] for a file of the project,'
            " home_read for one of the home.]"
        )
    if by_kind["hidden"]:
        shown = ", ".join(by_kind["hidden"])
        notes.append(
            f"[Sandbox: {shown} {'is' if len(by_kind['hidden']) == 1 else 'are'} not visible to commands (they see"
            " the system, the session's directories, a fresh empty home and /tmp, and what the user allowed). Do"
            " not look for a way around it: if the command needs it, ask the user to add it to [sandbox] home_read"
            f" (read-only) or home_write in {_CONFIG}.]"
        )
    if not confined.network and any(phrase in output for phrase in (*_OFFLINE, "Connection refused")):
        notes.append("[Sandbox: commands have no network in this session. Ask the user if it is needed.]")
    refused = [line for line in output.splitlines() if "Read-only file system" in line or "resource busy" in line]
    if any(".git/" in line.lower() or line.rstrip().lower().endswith(".git") for line in refused):
        notes.append(
            "[Sandbox: a repository's .git/config, .git/hooks and .git/info are read-only to commands (git would"
            " run what they name outside the sandbox). Ask the user to change git settings or hooks.]"
        )
    if "No such process" in output and "kill" in command:
        notes.append("[Sandbox: a command sees only its own processes; it cannot signal others.]")
    return notes


def signal_of(result: CommandResult) -> str | None:
    """The signal that ended the command: its own, or the one a shell or bwrap reports as status 128 + N."""
    if result.signal is not None:
        return result.signal
    code = result.exit_code
    return signal_name(code - 128) if code is not None and 128 < code < 160 else None


def _limit_notes(confined: Confined, command: str, result: CommandResult, limits: Limits) -> list[str]:
    notes = []
    forks_failed = "fork" in result.output and "Resource temporarily unavailable" in result.output
    hit = confined.limits is not None and confined.limits.in_cgroup and confined.limits.exceeded(None) is not None
    if result.ended_by is None and limits.processes and (hit or forks_failed):
        notes.append(
            f"[Limits: the command reached the limit of {limits.processes:,} processes ([sandbox.limits]"
            " processes), so starting more failed. A fork bomb or a runaway loop? If a build really needs more,"
            " ask the user to raise the limit.]"
        )
    ended = signal_of(result)
    if ended == "SIGXCPU" or "CPU time limit exceeded" in result.output:
        notes.append(
            f"[Limits: a process used its {limits.cpu_s:,} s of CPU time ([sandbox.limits] cpu_s) and was killed.]"
        )
    if ended == "SIGXFSZ" or "File size limit exceeded" in result.output:
        notes.append(
            f"[Limits: a process tried to write a file over {limits.file_size_mib:,} MiB ([sandbox.limits]"
            " file_size_mib) and was stopped.]"
        )
    private = ("/tmp", "~", "$HOME", *([confined.view.home] if confined.view and confined.view.home else []))
    full = [line for line in result.output.splitlines() if "No space left on device" in line]
    named = any(p in text for text in (*full, command) for p in private)
    if full and confined.sandboxed and limits.tmp_mib and named:
        notes.append(
            f"[Limits: /tmp, /var/tmp and the home of a command hold {limits.tmp_mib:,} MiB each ([sandbox.limits]"
            " tmp_mib; they are memory). Write large files into the session's directories instead.]"
        )
    killed_for_memory = confined.limits is not None and confined.limits.memory_killed()
    if killed_for_memory or "Cannot allocate memory" in result.output or "MemoryError" in result.output:
        notes.append(
            f"[Limits: the command ran out of its memory ({limits.memory_mib:,} MiB, [sandbox.limits] memory_mib)."
            " Use less at once (smaller inputs, fewer parallel jobs) or ask the user to raise the limit.]"
        )
    return notes


def _named_paths(command: str, output: str, *, cwd: str, home: str | None) -> Iterable[tuple[str, str]]:
    """(as written, absolute) for the paths the command names and those the output says are missing."""
    for word in _WORD_BREAK.split(command):
        absolute = _absolute(word.rstrip("."), cwd=cwd, home=home)
        if absolute is not None:
            yield word, absolute
    for match in _MISSING.finditer(output):
        word = match.group(1)
        absolute = _absolute(word, cwd=cwd, home=home)
        if absolute is not None:
            yield word, absolute


def _absolute(word: str, *, cwd: str, home: str | None) -> str | None:
    for prefix in ("${HOME}", "$HOME", "~"):
        if word.startswith(prefix):
            if not home:
                return None
            return os.path.normpath(home + word[len(prefix) :])
    if word.startswith("/"):
        return os.path.normpath(word)
    if "/" in word or word.startswith("."):
        return os.path.normpath(os.path.join(cwd, word))
    return None


def _masked_names(masked: Iterable[str], command: str) -> list[str]:
    """Masked files the command names by their bare name (``cat .env``)."""
    found = []
    words = set(re.split(r"[\s'\"`;|&<>()=]+", command))
    for path in masked:
        name = os.path.basename(path)
        if name in words and name not in found:
            found.append(name)
    return found
