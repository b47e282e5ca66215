"""The agent's own git: run outside the sandbox, so nothing a repository's configuration names may run through it.

A repository is untrusted input: a command, or whoever wrote the repository, may have planted a ``core.fsmonitor``
program, hooks, a pager, an external diff, textconv or clean/smudge filters, which git runs for ``status`` and
``diff``. Existing repositories are kept from such changes by the sandbox (their ``config``, ``hooks/`` and ``info/``
are read-only to commands); one a command creates is checked when it ends: ``quarantine_new_repositories`` moves a
configuration that names programs aside and takes the execute bit off its hooks, so that a plain ``git status`` the
user runs there later runs nothing of it. ``run_git`` runs git with every one of them switched off:
``-c core.fsmonitor=`` and ``-c core.hooksPath=/dev/null`` (what ``status`` alone would run), no pager, no external
diff, no ssh
command, every filter the configuration defines made inert (``filter.<name>.process`` empty, ``clean`` and ``smudge``
``cat``), no optional index writes, and without the system configuration (``GIT_CONFIG_NOSYSTEM``); its
environment is the allow-list (``environment.EnvPolicy``) plus those switches. Each call is a subprocess (never on
the event loop) bounded by ``GIT_TIMEOUT_S``, its output capped. Knows nothing about what the output is for.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from hermes_acp import anchored

from .environment import EnvPolicy
from .process import OutputBuffer, run_command

__all__ = ["GIT_ENV", "GIT_TIMEOUT_S", "SAFE_CONFIG", "GitDone", "find_git", "quarantine_new_repositories", "run_git"]

GIT_TIMEOUT_S = 15.0
"""Bound on each git command."""
SAFE_CONFIG: tuple[str, ...] = (
    "-c", "core.fsmonitor=",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.pager=cat",
    "-c", "core.sshCommand=false",
    "-c", "diff.external=",
    "-c", "core.quotePath=true",
    "-c", "color.ui=never",
    "--no-pager",
)  # fmt: skip
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "LC_ALL": "C",
}


@dataclass(frozen=True, slots=True)
class GitDone:
    exit_code: int | None
    text: str
    """The output kept (at most the limit), decoded (stdout and stderr together)."""
    kept: int
    """Bytes kept."""
    total: int
    """The output's whole size in bytes."""

    @property
    def cut(self) -> bool:
        return self.total > self.kept


def find_git() -> str | None:
    return shutil.which("git")


async def run_git(
    git: str, *args: str, cwd: Path, env_policy: EnvPolicy, limit: int = 64 * 1024, filters: bool = True
) -> GitDone | None:
    """One git command, its output capped at ``limit`` bytes; None when it did not finish in time. ``filters``:
    make the configuration's filters inert first (one more git call, which reads the configuration only)."""
    env = {**env_policy.base(os.environ), **GIT_ENV}
    overrides: list[str] = []
    if filters:
        listed = await _run(git, [*SAFE_CONFIG, "config", "--name-only", "--get-regexp", r"^filter\."], cwd, env, limit)
        names = {line.rsplit(".", 1)[0] for line in (listed.text.splitlines() if listed else []) if "." in line}
        for name in sorted(names):
            overrides += ["-c", f"{name}.process=", "-c", f"{name}.clean=cat", "-c", f"{name}.smudge=cat"]
    return await _run(git, [*SAFE_CONFIG, *overrides, *args], cwd, env, limit)


async def _run(git: str, args: list[str], cwd: Path, env: dict[str, str], limit: int) -> GitDone | None:
    buffer = OutputBuffer(head_limit=max(limit, 0), tail_limit=0)

    async def ignore(_: OutputBuffer) -> None:
        return None

    result = await run_command([git, *args], cwd=cwd, env=env, timeout_s=GIT_TIMEOUT_S, buffer=buffer, on_output=ignore)
    if result.timed_out:
        return None
    kept = bytes(buffer.head)
    return GitDone(result.exit_code, kept.decode("utf-8", errors="replace"), len(kept), buffer.total)


# ------------------------------------------------------------------------------ repositories a command created

_RUNS_PROGRAMS = re.compile(
    r"^(core\.(fsmonitor|hookspath|pager|editor|sshcommand|gitproxy|askpass)"
    r"|credential\..*|diff\.external|diff\..+\.(command|textconv)|merge\..+\.driver|filter\..+"
    r"|gpg\.program|gpg\..+\.program|sequence\.editor|uploadpack\..+|remote\..+\.(uploadpack|receivepack)"
    r"|include\.path|includeif\..+\.path|alias\..+)$"
)
"""Configuration keys that make git run a program (or read another file that could): any of them in a repository a
command created sends its configuration to quarantine."""
QUARANTINE_NAME = "config.quarantined"
_SAFE_NEW_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"


def quarantine_new_repositories(created: list[str], roots: tuple[str, ...]) -> list[str]:
    """For each ``.git`` a command created (``created``: entries that were not there when it started): a configuration
    that names a program git would run (``_RUNS_PROGRAMS``) is moved aside to ``config.quarantined`` and replaced by a
    minimal one, and executable hooks lose their execute bit, so that nothing the command planted runs when the user
    (or the editor) runs git there later, outside the sandbox. Returns the notes for the model (blocking)."""
    notes: list[str] = []
    for entry in created:
        gitdir = Path(entry)
        if gitdir.is_file():
            pointed = _gitdir_of(gitdir)
            if pointed is None:
                continue
            gitdir = pointed
        real = Path(os.path.realpath(gitdir))
        if not real.is_dir() or not any(str(real) == r or str(real).startswith(r + "/") for r in roots):
            continue
        anchor = anchored.anchor_for(real, [Path(r) for r in roots])  # each step below: never through a link
        found: list[str] = []
        config = real / "config"
        keys = _config_keys(config)
        risky = [key for key in keys if _RUNS_PROGRAMS.match(key)]
        if risky:
            try:
                anchored.rename(anchor, config, real / QUARANTINE_NAME, durable=False)
                anchored.write_file(anchor, config, _SAFE_NEW_CONFIG.encode(), new_mode=0o644, durable=False)
                found.append(f"its configuration named programs ({', '.join(sorted(set(risky))[:5])})")
            except OSError:
                continue
        disarmed = []
        for hook in anchored.entries(anchor, real / "hooks"):
            try:
                facts = anchored.lstat(anchor, hook)
                mode = facts.st_mode if facts is not None else 0
                if stat.S_ISREG(mode) and not hook.name.endswith(".sample") and mode & 0o111:
                    anchored.set_mode(anchor, hook, stat.S_IMODE(mode) & ~0o111)
                    disarmed.append(hook.name)
            except OSError:
                continue
        if disarmed:
            found.append(f"it had executable hooks ({', '.join(sorted(disarmed)[:5])})")
        if found:
            notes.append(
                f"[Sandbox: the command created a git repository at {entry}; {' and '.join(found)}, which git would run"
                f" outside the sandbox. They were switched off (the configuration is kept as {QUARANTINE_NAME};"
                " the hooks are no longer executable). Tell the user; do not set them up again.]"
            )
    return notes


def _config_keys(config: Path) -> list[str]:
    """The keys of a git configuration file (lower-cased, ``section.subsection.key``), read without git."""
    keys: list[str] = []
    section = ""
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return keys
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            header = line[1 : line.find("]")] if "]" in line else line[1:]
            name, _, sub = header.partition(" ")
            sub = sub.strip().strip('"')
            section = f"{name.strip().lower()}.{sub}" if sub else name.strip().lower()
            rest = line[line.find("]") + 1 :].strip() if "]" in line else ""
            if not rest:
                continue
            line = rest
        key = line.split("=", 1)[0].strip().lower()
        if key and section:
            keys.append(f"{section}.{key}")
    return keys


def _gitdir_of(pointer: Path) -> Path | None:
    try:
        line = pointer.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    return pointer.parent / line[len("gitdir:") :].strip()
