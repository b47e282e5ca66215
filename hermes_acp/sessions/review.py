"""``/review``: the uncommitted changes of the session's cwd, collected with git, and the prompt that asks for a review.

``collect_changes`` answers what there is to review: the diff against ``HEAD`` (staged and unstaged together; in a
repository without a commit yet, the staged and the unstaged changes) and the untracked files by name, or why there
is nothing to review (not a git repository, no changes, git missing, failing or too slow). Each git command runs as
a subprocess (never on the event loop), bounded by ``GIT_TIMEOUT_S``; the diff is capped at ``MAX_DIFF_BYTES`` and
the untracked list at ``MAX_UNTRACKED`` names, and ``Changes.prompt`` (what the model is asked) says what was cut.

A repository is untrusted input: git runs with what its configuration could make it execute switched off (no
external diff drivers, no textconv filters, no fsmonitor hook, no pager, no optional index writes) and without the
variables the session's ``EnvPolicy`` withholds from every child (provider keys, secret-looking names). It runs
outside the command sandbox, which would hide a repository under ``/tmp`` or above the session's folder. The diff
passes the one sanitizer before the model sees it. Nothing here knows sessions or the model.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import structlog

from hermes_acp.core.sanitize import sanitize_text
from hermes_acp.exec.environment import EnvPolicy
from hermes_acp.exec.process import OutputBuffer, run_command

__all__ = ["GIT_TIMEOUT_S", "MAX_DIFF_BYTES", "MAX_UNTRACKED", "Changes", "NothingToReview", "collect_changes"]

GIT_TIMEOUT_S = 15.0
"""Bound on each git command."""
MAX_DIFF_BYTES = 200_000
"""The most of the diff the model gets (the rest is cut, and the prompt says so)."""
MAX_UNTRACKED = 200
"""The most untracked file names listed."""
_SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", "core.quotePath=true", "-c", "color.ui=never", "--no-pager")
_DIFF_FLAGS = ("--no-ext-diff", "--no-textconv", "--no-color")
_GIT_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "PAGER": "cat", "LC_ALL": "C"}
_log = structlog.get_logger("hermes_acp.sessions")


@dataclass(frozen=True, slots=True)
class NothingToReview:
    """Why there is nothing to send to the model (the user is told this instead)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Changes:
    root: str
    diff: str
    diff_bytes: int
    """The whole diff's size; more than ``len(diff)`` when it was cut."""
    untracked: list[str]
    untracked_total: int

    @property
    def diff_cut(self) -> bool:
        return self.diff_bytes > MAX_DIFF_BYTES

    def prompt(self, focus: str) -> str:
        """What the model is asked, with the changes."""
        lines = [
            "Review the uncommitted changes of this repository (the diff against HEAD, staged and unstaged, and the"
            " untracked files below). Read the surrounding code where you need it; do not change any file.",
            "Report, most important first: bugs and regressions, security problems, missing or wrong tests, and"
            " unclear code. Quote the file and line for each finding; say briefly when something looks right.",
        ]
        if focus:
            lines.append(f"Focus: {focus}")
        lines.append(f"\nRepository: {self.root}")
        if self.diff:
            cut = (
                f" (cut: the first {MAX_DIFF_BYTES:,} of {self.diff_bytes:,} bytes; read the files for the rest)"
                if self.diff_cut
                else ""
            )
            lines.append(f"\nDiff{cut}:\n```diff\n{self.diff.rstrip()}\n```")
        if self.untracked:
            more = self.untracked_total - len(self.untracked)
            listed = "\n".join(f"- {name}" for name in self.untracked)
            tail = f"\n(and {more} more not listed)" if more > 0 else ""
            lines.append(f"\nUntracked files (new, not in the diff; read them):\n{listed}{tail}")
        return "\n".join(lines)


async def collect_changes(cwd: Path, env_policy: EnvPolicy) -> Changes | NothingToReview:
    """The uncommitted changes of the repository ``cwd`` belongs to, or why there are none to review."""
    git = shutil.which("git")
    env = {**env_policy.filter(os.environ), **_GIT_ENV}
    if git is None:
        return NothingToReview("git is not installed here, so /review cannot see the changes.")
    top = await _git(env, cwd, git, "rev-parse", "--show-toplevel")
    if top is None:
        return NothingToReview(f"git did not answer within {GIT_TIMEOUT_S:g} s in {cwd}.")
    if top.exit_code != 0:
        if "not a git repository" in top.text:
            return NothingToReview(f"{cwd} is not inside a git repository: there are no uncommitted changes to review.")
        return NothingToReview(f"git failed in {cwd}: {_first_line(top.text)}")
    root = top.text.strip()
    cwd = Path(root)  # from here paths are the repository's, whichever folder of it the session is in
    head = await _git(env, cwd, git, "rev-parse", "--verify", "--quiet", "HEAD")
    has_head = head is not None and head.exit_code == 0
    diffs = (
        [("diff", *_DIFF_FLAGS, "HEAD")] if has_head else [("diff", *_DIFF_FLAGS, "--cached"), ("diff", *_DIFF_FLAGS)]
    )
    diff_text, kept, diff_bytes = "", 0, 0
    for args in diffs:
        done = await _git(env, cwd, git, *args, limit=MAX_DIFF_BYTES - kept)
        if done is None or done.exit_code != 0:
            why = "did not answer in time" if done is None else _first_line(done.text)
            return NothingToReview(f"git diff failed in {root}: {why}")
        diff_text += done.text
        kept += done.kept
        diff_bytes += done.total
    listed = await _git(env, cwd, git, "ls-files", "--others", "--exclude-standard", "-z", limit=64 * 1024)
    if listed is None or listed.exit_code != 0:
        why = "did not answer in time" if listed is None else _first_line(listed.text)
        return NothingToReview(f"git ls-files failed in {root}: {why}")
    names = [name for name in listed.text.split("\0") if name]
    if listed.cut:
        names = names[:-1]  # the last name may be cut in the middle
    if not diff_text.strip() and not names:
        return NothingToReview(f"No uncommitted changes in {root}: nothing to review.")
    diff, removals = sanitize_text(diff_text)
    if removals:
        _log.warning("hidden characters removed from a diff under review", root=root, **removals.as_log())
    untracked = [sanitize_text(name)[0] for name in names[:MAX_UNTRACKED]]
    total = len(names) + (1 if listed.cut else 0)
    return Changes(root, diff, diff_bytes, untracked, total)


@dataclass(frozen=True, slots=True)
class _Done:
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


async def _git(env: dict[str, str], cwd: Path, git: str, *args: str, limit: int = 64 * 1024) -> _Done | None:
    """One git command, its output capped at ``limit`` bytes; None when it did not finish in time."""
    buffer = OutputBuffer(head_limit=max(limit, 0), tail_limit=0)

    async def ignore(_: OutputBuffer) -> None:
        return None

    result = await run_command(
        [git, *_SAFE_CONFIG, *args], cwd=cwd, env=env, timeout_s=GIT_TIMEOUT_S, buffer=buffer, on_output=ignore
    )
    if result.timed_out:
        return None
    kept = bytes(buffer.head)
    return _Done(result.exit_code, kept.decode("utf-8", errors="replace"), len(kept), buffer.total)


def _first_line(text: str) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "no output")
    return sanitize_text(line[:300])[0]
