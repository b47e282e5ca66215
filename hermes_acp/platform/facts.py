"""What hermes-acp contains, what asks and what it lacks on each system: one table, printed by ``--check`` for this
machine and kept word for word in the README (a test compares them), so the two never disagree.

Pure data; knows nothing about whether the backend works here (``--check`` adds its probe's answer).
"""

from __future__ import annotations

from dataclasses import dataclass

from .system import SystemName, system_name

__all__ = ["FACTS", "Facts", "facts"]


@dataclass(frozen=True, slots=True)
class Facts:
    system: str
    contained: str
    asks: str
    missing: str
    shared: str
    """Shared mode (``--shared``, ``hermes-acp host``): how the session host is reached and who may reach it."""
    tested: str


FACTS: dict[SystemName, Facts] = {
    "linux": Facts(
        system="Linux",
        contained="commands in bubblewrap (allow-list view, secrets masked, .git protected, network by mode);"
        " limits by cgroups and prlimit",
        asks="every command when bubblewrap is missing or cannot build a sandbox",
        missing="nothing",
        shared="a Unix socket; its peer checked by SO_PEERCRED; a short folder when the path passes 107 bytes",
        tested="the whole suite, on Debian 12 here and Ubuntu in CI (with Windows' threaded stdio and process tree"
        " forced through the real process: make portable)",
    ),
    "wsl": Facts(
        system="Linux under WSL2",
        contained="as on Linux (bubblewrap, cgroups and prlimit)",
        asks="as on Linux",
        missing="as on Linux; WSL1 has no user namespaces, so every command asks there",
        shared="as on Linux",
        tested="detection only (by test on Linux)",
    ),
    "darwin": Facts(
        system="macOS",
        contained="commands in Seatbelt (sandbox-exec) rendered from the same policy as bubblewrap; CPU, file size"
        " and data by setrlimit; processes and memory by a process-group watcher",
        asks="every command when the Seatbelt probe fails (a nested sandbox, a missing sandbox-exec)",
        missing="a private /tmp (commands write in their own $TMPDIR); a kernel memory limit",
        shared="a Unix socket; its peer checked by LOCAL_PEERCRED (xucred); a short folder when the path passes"
        " 103 bytes",
        tested="the Seatbelt profile, a recorded xucred, 103-byte socket paths and the driver's macOS answers by test"
        " on Linux; the sandbox and the suite for real in the macOS CI job (not run yet: the repository is not"
        " published)",
    ),
    "win32": Facts(
        system="Windows",
        contained="nothing: there is no sandbox for Windows yet",
        asks="every command, in every mode",
        missing="the sandbox, resource limits, shared mode (the session host)",
        shared="refused: shared mode needs macOS or Linux for now",
        tested="by type (mypy --platform win32); its threaded stdio, process tree and shared-mode refusal forced"
        " through the real process on Linux; the suite in the Windows CI job (not run yet: the repository is not"
        " published)",
    ),
}


def facts() -> Facts:
    """This machine's row."""
    return FACTS[system_name()]
