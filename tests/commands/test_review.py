"""What ``/review`` sends the model: git's view of the uncommitted changes (staged, unstaged, untracked), capped with
a note of what was cut; nothing at all outside a repository or without changes; and nothing a hostile repository's
configuration tells git to run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hermes_acp.commands.review import Changes, NothingToReview, collect_changes
from hermes_acp.exec.environment import EnvPolicy

pytestmark = pytest.mark.anyio

ENV = EnvPolicy.of(["REVIEW_TEST_KEY"])


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def repository(tmp_path: Path, *, commit: bool = True) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "util.py").write_text("X = 1\n")
    if commit:
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", "start")
    return repo


async def test_outside_a_repository_there_is_nothing_to_review(tmp_path: Path) -> None:
    found = await collect_changes(tmp_path, ENV)
    assert found == NothingToReview(
        f"{tmp_path} is not inside a git repository: there are no uncommitted changes to review."
    )


async def test_a_clean_repository_has_nothing_to_review(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    assert await collect_changes(repo / ".", ENV) == NothingToReview(
        f"No uncommitted changes in {repo}: nothing to review."
    )


async def test_staged_unstaged_and_untracked_changes_are_all_sent(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    (repo / "app.py").write_text("def add(a, b):\n    return a - b\n")
    git(repo, "add", "app.py")
    (repo / "util.py").write_text("X = 2\n")
    (repo / "notes").mkdir()
    (repo / "notes" / "todo.md").write_text("later")
    found = await collect_changes(repo / "notes", ENV)
    assert isinstance(found, Changes)
    assert (found.root, found.untracked, found.untracked_total, found.diff_cut) == (
        str(repo),
        ["notes/todo.md"],
        1,
        False,
    )
    assert "-    return a + b\n+    return a - b" in found.diff, "staged"
    assert "-X = 1\n+X = 2" in found.diff, "unstaged"
    prompt = found.prompt("the arithmetic")
    assert prompt.startswith("Review the uncommitted changes of this repository")
    assert "Focus: the arithmetic" in prompt
    assert f"```diff\n{found.diff.rstrip()}\n```" in prompt
    assert "Untracked files (new, not in the diff; read them):\n- notes/todo.md" in prompt


async def test_a_repository_without_commits_shows_its_staged_and_unstaged_files(tmp_path: Path) -> None:
    repo = repository(tmp_path, commit=False)
    git(repo, "add", "app.py")
    (repo / "app.py").write_text("print('changed after staging')\n")
    found = await collect_changes(repo, ENV)
    assert isinstance(found, Changes)
    assert "+def add(a, b):" in found.diff, "the staged file, against nothing"
    assert "+print('changed after staging')" in found.diff, "the unstaged change on top"
    assert found.untracked == ["util.py"]


async def test_a_big_diff_is_cut_and_the_prompt_says_how_much(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    (repo / "app.py").write_text("".join(f"line {i}\n" for i in range(200)))
    for name in ("a.txt", "b.txt", "c.txt"):
        (repo / name).write_text(name)
    found = await collect_changes(repo, ENV, max_diff_bytes=300, max_untracked=2)
    assert isinstance(found, Changes)
    assert found.diff_cut and len(found.diff.encode()) <= 300 < found.diff_bytes
    assert (found.untracked, found.untracked_total) == (["a.txt", "b.txt"], 3)
    prompt = found.prompt("")
    assert f"Diff (cut: the first 300 of {found.diff_bytes:,} bytes; read the files for the rest):" in prompt
    assert "(and 1 more not listed)" in prompt


async def test_a_hostile_repository_cannot_make_git_run_its_programs(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho ran >> {marker}\ncat\n")
    script.chmod(0o755)
    for key, value in (
        ("core.fsmonitor", str(script)),
        ("diff.external", str(script)),
        ("diff.evil.textconv", str(script)),
        ("core.pager", str(script)),
    ):
        git(repo, "config", key, value)
    (repo / ".gitattributes").write_text("*.py diff=evil\n")
    (repo / "app.py").write_text("changed = True\n")
    (repo / "util.py").write_text("X = '\U000e0069\U000e0067\U000e006e hidden'\n")
    found = await collect_changes(repo, ENV)
    assert isinstance(found, Changes)
    assert not marker.exists(), "no hook, external diff, textconv filter or pager ran"
    assert "+changed = True" in found.diff
    assert "+X = ' hidden'" in found.diff, "hidden characters are removed before the model sees them"
