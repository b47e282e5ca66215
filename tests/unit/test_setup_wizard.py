"""`hermes-acp --setup` and the one config.toml writer it shares with the in-editor setup: the file loads, keeps the
user's comments and other keys, a backup is kept, answers are checked like the form's, and nothing blocks without
a terminal."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

import pytest

from hermes_acp.config import load_settings
from hermes_acp.errors import ConfigError
from hermes_acp.onboarding.config_file import ProviderChoice, write_choice
from hermes_acp.onboarding.presets import PRESETS
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.setup_wizard import run_setup

OPENAI = str(next(i for i, p in enumerate(PRESETS, start=1) if p.id == "openai"))
OLLAMA = str(next(i for i, p in enumerate(PRESETS, start=1) if p.id == "ollama"))
CUSTOM = str(next(i for i, p in enumerate(PRESETS, start=1) if p.id == "custom"))
COMMENTED = """\
# my settings: keep me
[model]
default = "mine:m"  # the one I use

[providers.mine]  # a server of mine
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
models = ["m"]
timeout_s = 30

[agent]
max_turn_requests = 12  # enough
"""


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *answers: str) -> tuple[int, list[str]]:
    monkeypatch.setenv("HERMES_ACP_HOME", str(tmp_path))
    queue = iter(answers)
    said: list[str] = []
    return run_setup(said.append, lambda _question: next(queue)), said


def test_setup_writes_the_file_keeps_a_backup_and_every_comment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config.toml").write_text(COMMENTED)
    code, said = _run(tmp_path, monkeypatch, OPENAI, "", "gpt-5.4-mini", "y", "")
    assert code == 0
    assert any("Wrote" in line for line in said)
    text = (tmp_path / "config.toml").read_text()
    for line in COMMENTED.splitlines():
        if "#" in line and "default" not in line:
            assert line in text, f"kept: {line!r}"
    settings = load_settings({"OPENAI_API_KEY": "k"}, home=tmp_path)
    assert settings.providers["openai"].api_key_env == "OPENAI_API_KEY"
    assert settings.providers["mine"].timeout_s == 30
    assert settings.agent.max_turn_requests == 12
    assert ModelCatalog.from_settings(settings, {"OPENAI_API_KEY": "k"}).default_id == "openai:gpt-5.4-mini"
    assert (tmp_path / "config.toml.bak").read_text() == COMMENTED


def test_setup_without_a_terminal_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_ACP_HOME", str(tmp_path))

    def no_terminal(_question: str) -> str:
        raise EOFError

    said: list[str] = []
    assert run_setup(said.append, no_terminal) == 2
    assert "nothing written" in said[-1]
    assert not (tmp_path / "config.toml").exists()


@pytest.mark.parametrize("model", ['say "hi"', "back\\slash", "qwen3:14b-ünï-😀", "a = b ] [c"])
def test_any_model_id_is_written_as_a_toml_string_that_reads_back_the_same(tmp_path: Path, model: str) -> None:
    choice = ProviderChoice("local", "openai", "http://127.0.0.1:11434/v1", "MY_API_KEY", model)
    written = write_choice(tmp_path / "config.toml", choice, {}, home=tmp_path)
    parsed = tomllib.loads((tmp_path / "config.toml").read_text())
    assert parsed["model"]["default"] == f"local:{model}"
    assert parsed["providers"]["local"]["models"] == [{"id": model, "vision": False}]
    assert written.settings.model.default == f"local:{model}"


def test_a_model_already_listed_is_not_added_twice_and_other_models_stay(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(COMMENTED)
    write_choice(
        tmp_path / "config.toml",
        ProviderChoice("mine", "openai", "http://127.0.0.1:9/v1", None, "m"),
        {},
        home=tmp_path,
    )
    write_choice(
        tmp_path / "config.toml",
        ProviderChoice("mine", "openai", "http://127.0.0.1:9/v1", None, "n"),
        {},
        home=tmp_path,
    )
    parsed = tomllib.loads((tmp_path / "config.toml").read_text())
    assert parsed["providers"]["mine"]["models"] == ["m", {"id": "n", "vision": False}]
    assert parsed["model"]["default"] == "mine:n"


def test_a_config_that_is_not_toml_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[model\n")
    with pytest.raises(ConfigError, match="left as it was"):
        write_choice(
            tmp_path / "config.toml", ProviderChoice("x", "openai", "http://h/v1", None, "m"), {}, home=tmp_path
        )
    assert (tmp_path / "config.toml").read_text() == "[model\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"], "no draft or backup left behind"


def test_a_config_whose_other_keys_do_not_load_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[agent]\nno_such_key = 1\n")
    with pytest.raises(ConfigError, match=r"unknown key 'agent\.no_such_key'"):
        write_choice(
            tmp_path / "config.toml", ProviderChoice("x", "openai", "http://h/v1", None, "m"), {}, home=tmp_path
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]


def test_config_and_its_backup_are_private_whatever_the_umask_and_no_draft_stays(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(COMMENTED)
    (tmp_path / "config.toml").chmod(0o644)
    old = os.umask(0o022)
    try:
        write_choice(
            tmp_path / "config.toml", ProviderChoice("x", "openai", "http://h/v1", None, "m"), {}, home=tmp_path
        )
    finally:
        os.umask(old)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml", "config.toml.bak"], "no draft left"
    assert (tmp_path / "config.toml.bak").read_text() == COMMENTED
    assert [stat.S_IMODE((tmp_path / n).stat().st_mode) for n in ("config.toml", "config.toml.bak")] == [0o600] * 2


def test_a_config_that_is_a_link_is_refused_not_written_through(tmp_path: Path) -> None:
    elsewhere = tmp_path / "dotfiles.toml"
    elsewhere.write_text(COMMENTED)
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").symlink_to(elsewhere)
    with pytest.raises(ConfigError, match="is a link"):
        write_choice(home / "config.toml", ProviderChoice("x", "openai", "http://h/v1", None, "m"), {}, home=home)
    assert elsewhere.read_text() == COMMENTED and sorted(p.name for p in home.iterdir()) == ["config.toml"]


def test_setup_with_a_quote_in_an_answer_writes_a_config_that_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _ = _run(tmp_path, monkeypatch, OLLAMA, "", 'my "best" model', "n", "")
    assert code == 0
    assert load_settings({}, home=tmp_path).model.default == 'ollama:my "best" model'


def test_a_custom_anthropic_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, _ = _run(
        tmp_path, monkeypatch, CUSTOM, "anthropic", "https://gw.example/anthropic", "claude-x", "y", "GW_API_KEY"
    )
    assert code == 0
    provider = load_settings({}, home=tmp_path).providers["custom"]
    assert (provider.kind, provider.base_url, provider.api_key_env) == (
        "anthropic",
        "https://gw.example/anthropic",
        "GW_API_KEY",
    )


@pytest.mark.parametrize(
    ("answers", "said"),
    [
        ((OLLAMA, "ftp://127.0.0.1/v1", "qwen3", "n", ""), "must start with http:// or https://"),
        ((CUSTOM, "openai", "", "m", "n", ""), "needs its base URL"),
        ((OLLAMA, "", "", "n", ""), "a model id is needed"),
        (("99",), "unknown choice"),
    ],
)
def test_answers_that_cannot_work_write_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answers: tuple[str, ...], said: str
) -> None:
    (tmp_path / "config.toml").write_text("# old\n")
    code, lines = _run(tmp_path, monkeypatch, *answers)
    assert code == 2
    assert said.lower() in lines[-1].lower()
    assert (tmp_path / "config.toml").read_text() == "# old\n"


def test_a_key_typed_where_its_name_belongs_is_refused_and_not_repeated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-or-v1-0123456789abcdef0123456789abcdef"
    code, lines = _run(tmp_path, monkeypatch, OPENAI, "", "gpt-5.4", "n", key)
    assert code == 2
    assert "NAME of an environment variable" in lines[-1]
    assert all(key not in line for line in lines)
    assert not (tmp_path / "config.toml").exists()
