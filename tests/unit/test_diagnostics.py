"""``hermes-acp --check`` opens the session store as the server would, and counts one it cannot open as a problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_acp.diagnostics import run_check


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    for name in ("HERMES_ACP_BASE_URL", "HERMES_ACP_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HERMES_ACP_HOME", str(home))
    monkeypatch.setenv("HERMES_CUA_DRIVER_CMD", str(tmp_path / "no-such-driver"))
    return home


def test_a_store_that_opens_is_reported_ready(home: Path) -> None:
    lines: list[str] = []
    assert run_check(lines.append) == 0
    assert f"  ✓ session store: {home / 'state.db'}" in lines
    assert lines[-1] == "Result: ready to serve"


def test_a_store_that_cannot_be_opened_is_a_problem(home: Path) -> None:
    (home / "state.db").write_bytes(b"this is not a SQLite database, not even close" * 100)
    lines: list[str] = []
    assert run_check(lines.append) == 1
    [store_line] = [line for line in lines if "session store" in line]
    assert store_line.startswith("  ✗ cannot open the session store")
    assert lines[-1] == "Result: 1 problem(s) to fix"
