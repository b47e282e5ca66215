"""``[sandbox]`` in config.toml: defaults, values, and errors that name the key; ``--check`` reports the sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_acp.config import load_settings
from hermes_acp.diagnostics import run_check
from hermes_acp.errors import ConfigError


def settings_from(tmp_path: Path, text: str) -> object:
    (tmp_path / "config.toml").write_text(text)
    return load_settings({}, home=tmp_path)


def test_defaults_and_values(tmp_path: Path) -> None:
    assert load_settings({}, home=tmp_path).sandbox.model_dump() == {
        "mode": "auto", "network": True, "mask": [], "pass_env": []
    }  # fmt: skip
    settings = settings_from(
        tmp_path, '[sandbox]\nmode = "required"\nnetwork = false\nmask = ["~/.kube"]\npass_env = ["GH_TOKEN"]\n'
    )
    assert settings.sandbox.model_dump() == {  # type: ignore[attr-defined]
        "mode": "required", "network": False, "mask": ["~/.kube"], "pass_env": ["GH_TOKEN"]
    }  # fmt: skip


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[sandbox]\nwritable = ['/srv']\n", "unknown key 'sandbox.writable'"),
        ('[sandbox]\nmode = "sometimes"\n', "sandbox.mode"),
        ('[sandbox]\npass_env = ["NOT-A-NAME"]\n', "'NOT-A-NAME' is not an environment variable name"),
        ('[sandbox]\nmask = [""]\n', "sandbox.mask"),
    ],
)
def test_bad_sandbox_settings_name_the_key(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=r"config\.toml") as raised:
        settings_from(tmp_path, text)
    assert problem in str(raised.value)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("", "sandboxed by bubblewrap"),
        ('[sandbox]\nmode = "off"\n', "the sandbox is off"),
        ('[sandbox]\npass_env = ["GH_TOKEN"]\n', "allowed back: GH_TOKEN"),
    ],
)
def test_check_reports_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str, expected: str) -> None:
    from tests.security.support import require_bwrap

    if "off" not in config:
        require_bwrap()
    monkeypatch.setenv("HERMES_ACP_HOME", str(tmp_path))
    monkeypatch.setenv("HERMES_CUA_DRIVER_CMD", str(tmp_path / "no-driver"))
    monkeypatch.setenv("GH_TOKEN", "ghp-secret-value")
    (tmp_path / "config.toml").write_text(config)
    lines: list[str] = []
    run_check(lines.append)
    report = "\n".join(lines)
    assert expected in report
    assert "ghp-secret-value" not in report
