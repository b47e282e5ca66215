"""``[sandbox]`` in config.toml: defaults, values, and errors that name the key; ``--check`` reports the sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_acp.config import DEFAULT_HOME_READ, load_settings
from hermes_acp.diagnostics import run_check
from hermes_acp.errors import ConfigError


def settings_from(tmp_path: Path, text: str) -> object:
    (tmp_path / "config.toml").write_text(text)
    return load_settings({}, home=tmp_path)


LIMITS = {"processes": 1024, "memory_mib": 8192, "cpu_s": 1800, "file_size_mib": 8192, "tmp_mib": 4096}


def test_defaults_and_values(tmp_path: Path) -> None:
    assert load_settings({}, home=tmp_path).sandbox.model_dump() == {
        "mode": "auto", "network": True, "home_read": list(DEFAULT_HOME_READ), "home_write": [], "mask": [],
        "reveal": [], "pass_env": [], "limits": LIMITS,
    }  # fmt: skip
    settings = settings_from(
        tmp_path,
        '[sandbox]\nmode = "required"\nnetwork = false\nmask = ["~/.kube"]\npass_env = ["GH_TOKEN"]\n'
        'home_read = ["~/.m2", "/opt/sdk"]\nhome_write = ["~/.cargo/registry"]\nreveal = [".env.example"]\n'
        "[sandbox.limits]\nprocesses = 256\ncpu_s = 0\n",
    )
    assert settings.sandbox.model_dump() == {  # type: ignore[attr-defined]
        "mode": "required", "network": False, "home_read": ["~/.m2", "/opt/sdk"], "home_write": ["~/.cargo/registry"],
        "mask": ["~/.kube"], "reveal": [".env.example"], "pass_env": ["GH_TOKEN"],
        "limits": {**LIMITS, "processes": 256, "cpu_s": 0},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[sandbox]\nwritable = ['/srv']\n", "unknown key 'sandbox.writable'"),
        ('[sandbox]\nmode = "sometimes"\n', "sandbox.mode"),
        ('[sandbox]\npass_env = ["NOT-A-NAME"]\n', "'NOT-A-NAME' is not an environment variable name"),
        ('[sandbox]\nmask = [""]\n', "sandbox.mask"),
        ('[sandbox]\nhome_read = ["projects/x"]\n', "must be a path in the home (~/...) or an absolute path"),
        ('[sandbox]\nhome_write = ["~"]\n', "the whole home cannot be bound"),
        ("[sandbox.limits]\nprocesses = -1\n", "sandbox.limits.processes"),
        ("[sandbox.limits]\nforks = 3\n", "unknown key 'sandbox.limits.forks'"),
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
        ('[sandbox]\npass_env = ["GH_TOKEN"]\n', "pass_env (GH_TOKEN)"),
        ("", "limits per command: processes 1,024"),
        ("", "what a command started in"),
        ("[sandbox.limits]\nprocesses = 64\n", "processes 64, memory 8,192 MiB"),
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
