"""``hermes-acp exec``'s answers to permission requests (``headless.policy``): each level allows what docs/ci.md says
and nothing more; edits only inside the session's directories; sensitive paths refused at every level; a policy
file's command patterns and kinds, refusals winning; a policy file that cannot be used is named with what is wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes_acp.headless.policy import ApprovalPolicy, PolicyError

ROOT = Path("/srv/repo")


def _call(kind: str, *paths: str, command: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"toolCallId": "c1", "title": "t", "kind": kind, "status": "pending"}
    if paths:
        call["locations"] = [{"path": p} for p in paths]
    if command is not None:
        call["rawInput"] = {"command": command}
    return call


READ_OUTSIDE = _call("read", "/etc/hosts")
EDIT_INSIDE = _call("edit", "/srv/repo/src/a.py")
EDIT_OUTSIDE = _call("edit", "/srv/other/a.py")
COMMAND = _call("execute", command="pytest -q")
FETCH = _call("fetch")
SECRET = _call("read", "/srv/repo/.env")


@pytest.mark.parametrize(
    ("level", "allowed"),
    [
        ("none", set()),
        ("reads", {"read_outside"}),
        ("edits", {"read_outside", "edit_inside"}),
        ("all", {"read_outside", "edit_inside", "edit_outside", "command", "fetch"}),
    ],
)
def test_each_level_allows_what_it_says_and_nothing_more(level: Any, allowed: set[str]) -> None:
    policy = ApprovalPolicy(level=level, roots=(ROOT,))
    calls = {
        "read_outside": READ_OUTSIDE,
        "edit_inside": EDIT_INSIDE,
        "edit_outside": EDIT_OUTSIDE,
        "command": COMMAND,
        "fetch": FETCH,
        "secret": SECRET,
    }
    assert {name for name, call in calls.items() if policy.decide(call).allowed} == allowed


def test_an_edit_through_dot_dot_is_judged_where_it_lands() -> None:
    policy = ApprovalPolicy(level="edits", roots=(ROOT,))
    verdict = policy.decide(_call("edit", "/srv/repo/../other/a.py"))
    assert not verdict.allowed
    assert "outside the session's directories" in verdict.reason


def test_a_sensitive_path_is_refused_at_every_level() -> None:
    verdict = ApprovalPolicy(level="all", roots=(ROOT,)).decide(_call("edit", "/srv/repo/.git/hooks/pre-commit"))
    assert (verdict.allowed, "sensitive path" in verdict.reason) == (False, True)


def test_a_policy_file_adds_commands_and_kinds_and_its_refusals_win(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(
        'approve = "reads"\nallow_kinds = ["fetch"]\nallow_commands = ["pytest*", "git *"]\n'
        'refuse_commands = ["git push*"]\n'
    )
    policy = ApprovalPolicy.load(path, [ROOT])
    decided = {
        command: policy.decide(_call("execute", command=command)).allowed
        for command in ("pytest -q", "git diff", "git push --force", "rm -rf build")
    }
    assert decided == {"pytest -q": True, "git diff": True, "git push --force": False, "rm -rf build": False}
    assert policy.decide(FETCH).allowed
    assert not policy.decide(EDIT_INSIDE).allowed
    assert "refuses commands matching 'git push*'" in policy.decide(_call("execute", command="git push")).reason


def test_refused_kinds_win_over_the_level(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('approve = "all"\nrefuse_kinds = ["fetch", "execute"]\nallow_commands = ["pytest*"]\n')
    policy = ApprovalPolicy.load(path, [ROOT])
    assert not policy.decide(FETCH).allowed
    assert not policy.decide(COMMAND).allowed
    assert policy.decide(EDIT_OUTSIDE).allowed


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("approve = 'some'\n", "approve must be one of none, reads, edits, all (got 'some')"),
        ("allow_kinds = ['write']\n", "allow_kinds: unknown kinds write"),
        ("allow_commands = 'pytest'\n", "allow_commands must be a list of strings"),
        ("approve = \n", "not a TOML file"),
        ("allow = ['x']\n", "unknown keys allow"),
    ],
)
def test_a_policy_file_that_cannot_be_used_says_what_is_wrong(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    with pytest.raises(PolicyError) as refused:
        ApprovalPolicy.load(path, [ROOT])
    assert said in str(refused.value)
    assert str(path) in str(refused.value)
