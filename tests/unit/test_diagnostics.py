"""``hermes-acp --check`` opens the session store as the server would, and counts one it cannot open as a problem;
a home whose default model cannot work (no provider, its key not set) is a problem too."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from hermes_acp.diagnostics import run_check

LOCAL = '[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodels = ["m"]\n'
"""A provider that needs no key: the check can pass without asking it (nothing listens on port 9)."""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(LOCAL)
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


def test_the_report_gives_free_space_and_the_store_s_health(home: Path) -> None:
    lines: list[str] = []
    assert run_check(lines.append) == 0
    store = lines.index(f"  ✓ session store: {home / 'state.db'}")
    assert re.fullmatch(
        rf"  ✓ [0-9.]+ (B|KiB|MiB|GiB) free on the file system holding {re.escape(str(home))}", lines[store - 1]
    )
    assert re.fullmatch(r"      quick_check ok, schema version 2 \(current 2\), [0-9.]+ KiB", lines[store + 1])


def test_a_store_whose_pages_are_damaged_is_a_problem_naming_the_cause(home: Path) -> None:
    path = home / "state.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE filler (x TEXT)")
        db.executemany("INSERT INTO filler VALUES (?)", [("x" * 500,) for _ in range(200)])
    data = bytearray(path.read_bytes())
    last_page = (len(data) // 4096 - 1) * 4096
    data[last_page + 3 : last_page + 5] = b"\xff\xff"  # the page's cell count: far more cells than fit
    path.write_bytes(bytes(data))
    lines: list[str] = []
    assert run_check(lines.append) == 1
    [store_line] = [line for line in lines if "session store" in line]
    assert store_line == f"  ✗ session store {path}: corrupt: database disk image is malformed (SQLITE_CORRUPT)"
    [offer] = [line for line in lines if "to repair it" in line]
    assert "`hermes-acp --repair`" in offer and "damaged" in offer, "--check offers the repair"


def test_a_full_disk_is_a_problem(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = shutil.disk_usage

    def nearly_full(path: str | Path) -> Any:
        usage = real(path)
        return type(usage)(usage.total, usage.total - 4096, 4096)

    monkeypatch.setattr(shutil, "disk_usage", nearly_full)
    lines: list[str] = []
    assert run_check(lines.append) == 1
    assert f"  ✗ 4.0 KiB free on the file system holding {home}: turns cannot be stored" in lines


def test_no_provider_at_all_is_a_problem(home: Path) -> None:
    (home / "config.toml").unlink()
    lines: list[str] = []
    assert run_check(lines.append) == 1
    assert any(line.startswith("  ✗ no model can work: no provider is configured") for line in lines)


def test_a_default_model_whose_key_is_not_set_is_a_problem(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / "config.toml").write_text(LOCAL.replace('models = ["m"]', 'api_key_env = "LOCAL_KEY"\nmodels = ["m"]'))
    monkeypatch.delenv("LOCAL_KEY", raising=False)
    lines: list[str] = []
    assert run_check(lines.append) == 1
    assert "  ✗ the default model local:m cannot work: LOCAL_KEY is not set in this environment" in "\n".join(lines)
    monkeypatch.setenv("LOCAL_KEY", "k")
    assert run_check(lambda _line: None) == 0
