"""``/review``: the uncommitted changes of the session's cwd, collected with git, and the prompt that asks for a review.

``collect_changes`` answers what there is to review: the diff against ``HEAD`` (staged and unstaged together; in a
repository without a commit yet, the staged and the unstaged changes) and the untracked files by name, or why there
is nothing to review (not a git repository, no changes, git missing, failing or too slow). Git runs through
``exec.git.run_git``: a subprocess bounded in time, with nothing a repository's configuration names able to run
(fsmonitor, hooks, pagers, external diffs, filters; ``--no-ext-diff --no-textconv`` on top) and the allow-list
environment. It runs outside the command sandbox, which would hide a repository under ``/tmp`` or above the
session's folder. The diff is capped at ``MAX_DIFF_BYTES`` and the untracked list at ``MAX_UNTRACKED`` names, and
``Changes.prompt`` (what the model is asked) says what was cut; the diff passes the one sanitizer before the model
sees it. Nothing here knows sessions or the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import structlog

from hermes_acp.core.sanitize import sanitize_text
from hermes_acp.exec.environment import EnvPolicy
from hermes_acp.exec.git import GIT_TIMEOUT_S, GitDone, find_git, run_git

__all__ = ["GIT_TIMEOUT_S", "MAX_DIFF_BYTES", "MAX_UNTRACKED", "Changes", "NothingToReview", "collect_changes"]

MAX_DIFF_BYTES = 200_000
"""The most of the diff the model gets (the rest is cut, and the prompt says so)."""
MAX_UNTRACKED = 200
"""The most untracked file names listed."""
_DIFF_FLAGS = ("--no-ext-diff", "--no-textconv", "--no-color")
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
    diff_limit: int = MAX_DIFF_BYTES
    """The bound the diff was cut at."""

    @property
    def diff_cut(self) -> bool:
        return self.diff_bytes > self.diff_limit

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
                f" (cut: the first {self.diff_limit:,} of {self.diff_bytes:,} bytes; read the files for the rest)"
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


async def collect_changes(
    cwd: Path, env_policy: EnvPolicy, *, max_diff_bytes: int = MAX_DIFF_BYTES, max_untracked: int = MAX_UNTRACKED
) -> Changes | NothingToReview:
    """The uncommitted changes of the repository ``cwd`` belongs to, or why there are none to review; the diff cut at
    ``max_diff_bytes``, the untracked names listed up to ``max_untracked``."""
    git = find_git()
    if git is None:
        return NothingToReview("git is not installed here, so /review cannot see the changes.")
    top = await _git(env_policy, cwd, git, "rev-parse", "--show-toplevel")
    if top is None:
        return NothingToReview(f"git did not answer within {GIT_TIMEOUT_S:g} s in {cwd}.")
    if top.exit_code != 0:
        if "not a git repository" in top.text:
            return NothingToReview(f"{cwd} is not inside a git repository: there are no uncommitted changes to review.")
        return NothingToReview(f"git failed in {cwd}: {_first_line(top.text)}")
    root = top.text.strip()
    cwd = Path(root)  # from here paths are the repository's, whichever folder of it the session is in
    head = await _git(env_policy, cwd, git, "rev-parse", "--verify", "--quiet", "HEAD")
    has_head = head is not None and head.exit_code == 0
    diffs = (
        [("diff", *_DIFF_FLAGS, "HEAD")] if has_head else [("diff", *_DIFF_FLAGS, "--cached"), ("diff", *_DIFF_FLAGS)]
    )
    diff_text, kept, diff_bytes = "", 0, 0
    for args in diffs:
        done = await _git(env_policy, cwd, git, *args, limit=max_diff_bytes - kept)
        if done is None or done.exit_code != 0:
            why = "did not answer in time" if done is None else _first_line(done.text)
            return NothingToReview(f"git diff failed in {root}: {why}")
        diff_text += done.text
        kept += done.kept
        diff_bytes += done.total
    listed = await _git(env_policy, cwd, git, "ls-files", "--others", "--exclude-standard", "-z", limit=64 * 1024)
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
    untracked = [sanitize_text(name)[0] for name in names[:max_untracked]]
    total = len(names) + (1 if listed.cut else 0)
    return Changes(root, diff, diff_bytes, untracked, total, diff_limit=max_diff_bytes)


async def _git(env_policy: EnvPolicy, cwd: Path, git: str, *args: str, limit: int = 64 * 1024) -> GitDone | None:
    """One git command (``exec.git``), its output capped at ``limit`` bytes; None when it did not finish in time."""
    return await run_git(git, *args, cwd=cwd, env_policy=env_policy, limit=limit, filters=args[0] == "diff")


def _first_line(text: str) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "no output")
    return sanitize_text(line[:300])[0]
