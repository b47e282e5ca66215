"""The mode policy: who may do what without asking (docs/architecture.md §1.2, §9.3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_acp.core import ModeId
from hermes_acp.tools.context import ApprovalRequest, Workspace
from hermes_acp.tools.policy import decide, is_sensitive

WORKSPACE = Workspace(cwd=Path("/home/dev/project"), additional=(Path("/home/dev/shared"),))


def edit(path: str) -> ApprovalRequest:
    return ApprovalRequest(scope="edit", title="edit", mutating=True, paths=(Path(path),))


def command() -> ApprovalRequest:
    return ApprovalRequest(scope="execute", title="run", mutating=True)


def read(path: str) -> ApprovalRequest:
    return ApprovalRequest(scope="read", title="read", mutating=False, paths=(Path(path),))


@pytest.mark.parametrize(
    ("mode", "request_", "decision"),
    [
        ("default", edit("/home/dev/project/a.py"), "ask"),
        ("default", command(), "ask"),
        ("default", read("/home/dev/project/a.py"), "allow"),
        ("default", read("/etc/hosts"), "ask"),
        ("accept_edits", edit("/home/dev/project/a.py"), "allow"),
        ("accept_edits", edit("/home/dev/shared/b.py"), "allow"),
        ("accept_edits", edit("/tmp/elsewhere.py"), "ask"),
        ("accept_edits", command(), "ask"),
        ("accept_edits", edit("/home/dev/project/.env"), "ask"),
        ("dont_ask", command(), "allow"),
        ("dont_ask", edit("/home/dev/project/a.py"), "allow"),
        ("dont_ask", edit("/home/dev/project/.git/config"), "ask"),
        ("dont_ask", edit("/tmp/outside.txt"), "ask"),
        ("read_only", edit("/home/dev/project/a.py"), "deny"),
        ("read_only", command(), "deny"),
        ("read_only", read("/home/dev/project/a.py"), "allow"),
        ("read_only", read("/etc/hosts"), "deny"),
        ("read_only", read("/home/dev/project/.env"), "ask"),
    ],
)
def test_modes(mode: ModeId, request_: ApprovalRequest, decision: str) -> None:
    assert decide(mode, request_, WORKSPACE, {}).decision == decision


def test_remembered_rules() -> None:
    assert decide("default", edit("/home/dev/project/a.py"), WORKSPACE, {"edit": "allow"}).decision == "allow"
    assert decide("dont_ask", command(), WORKSPACE, {"execute": "deny"}).decision == "deny"
    assert decide("default", edit("/home/dev/project/.ssh/id_rsa"), WORKSPACE, {"edit": "allow"}).decision == "ask"
    outside = decide("default", edit("/tmp/x"), WORKSPACE, {"edit": "allow"})
    assert outside.decision == "ask"
    assert outside.rule == "edit@outside"
    assert decide("default", edit("/tmp/x"), WORKSPACE, {"edit@outside": "allow"}).decision == "allow"


def test_sensitive_paths_offer_no_always() -> None:
    assert not decide("default", edit("/home/dev/project/.env.local"), WORKSPACE, {}).offer_always
    assert decide("default", edit("/home/dev/project/a.py"), WORKSPACE, {}).offer_always


@pytest.mark.parametrize(
    ("path", "sensitive"),
    [
        ("/p/.git/config", True),
        ("/home/u/.ssh/config", True),
        ("/p/.env", True),
        ("/p/.env.production", True),
        ("/p/id_ed25519", True),
        ("/p/server.pem", True),
        ("/p/src/env.py", False),
        ("/p/id_ed25519.pub", False),
    ],
)
def test_sensitive(path: str, sensitive: bool) -> None:
    assert is_sensitive(Path(path)) is sensitive


def test_symlink_escaping_the_workspace_counts_as_outside(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "escape").symlink_to(tmp_path)
    workspace = Workspace(cwd=project)
    assert not workspace.contains(workspace.resolve("escape/other.txt"))
    assert not workspace.contains(workspace.resolve("../other.txt"))
    assert workspace.contains(workspace.resolve("src/../main.py"))
