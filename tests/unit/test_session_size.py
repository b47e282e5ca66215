"""``Session`` stays small (issue 29 took it apart): at most 35 members and 450 lines, so new work goes into a
collaborator (``turns/budget.py``, ``sessions/options.py``…) rather than back onto it. Members are the methods and
properties of the class and every attribute its methods assign on ``self``."""

from __future__ import annotations

import ast
from pathlib import Path

SESSION = Path(__file__).resolve().parents[2] / "hermes_acp" / "sessions" / "session.py"
MAX_MEMBERS = 35
MAX_LINES = 450


def _members(tree: ast.Module) -> set[str]:
    [session] = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Session"]
    members: set[str] = set()
    for node in session.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            members.add(node.name)
            members |= {
                sub.attr
                for sub in ast.walk(node)
                if isinstance(sub, ast.Attribute)
                and isinstance(sub.value, ast.Name)
                and sub.value.id == "self"
                and isinstance(sub.ctx, ast.Store)
            }
        elif isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            members |= {t.id for t in targets if isinstance(t, ast.Name)}
    return members


def test_session_keeps_at_most_35_members_and_450_lines() -> None:
    source = SESSION.read_text(encoding="utf-8")
    members = _members(ast.parse(source))
    assert len(members) <= MAX_MEMBERS, sorted(members)
    assert len(source.splitlines()) <= MAX_LINES
