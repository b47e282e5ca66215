"""`hermes-acp --setup` writes a config that loads, keeps a backup, and never blocks without a terminal."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from hermes_acp.config import load_settings
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.setup_wizard import render_config, run_setup


def test_rendered_config_loads_with_the_chosen_default(tmp_path: Path) -> None:
    text = render_config("local", "openai", "http://127.0.0.1:11434/v1", None, model="qwen3", vision=True)
    (tmp_path / "config.toml").write_text(text)
    settings = load_settings({}, home=tmp_path)
    catalog = ModelCatalog.from_settings(settings, {})
    assert catalog.default_id == "local:qwen3"
    assert catalog.get("local:qwen3").vision


def test_setup_writes_the_file_and_keeps_a_backup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_ACP_HOME", str(tmp_path))
    (tmp_path / "config.toml").write_text("# old\n")
    answers = iter(["2", "", "gpt-5.4-mini", "y", ""])
    said: list[str] = []
    assert run_setup(said.append, lambda _question: next(answers)) == 0
    assert any("Wrote" in line for line in said)
    settings = load_settings({"OPENAI_API_KEY": "k"}, home=tmp_path)
    assert settings.providers["openai"].api_key_env == "OPENAI_API_KEY"
    assert (tmp_path / "config.toml.bak").read_text() == "# old\n"
    assert "sk-" not in (tmp_path / "config.toml").read_text()


def test_setup_without_a_terminal_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_ACP_HOME", str(tmp_path))

    def no_terminal(_question: str) -> str:
        raise EOFError

    said: list[str] = []
    assert run_setup(said.append, no_terminal) == 2
    assert "nothing written" in said[-1]
    assert not (tmp_path / "config.toml").exists()


@pytest.mark.parametrize("model", ['say "hi"', "back\\slash", "line\nbreak\ttab\x7f\x01", "qwen3:14b-ünï-😀"])
def test_any_answer_is_written_as_a_toml_string_that_reads_back_the_same(model: str) -> None:
    text = render_config("local", "openai", "http://127.0.0.1:11434/v1", "MY_KEY", model=model, vision=False)
    parsed = tomllib.loads(text)
    assert parsed["model"]["default"] == f"local:{model}"
    assert parsed["providers"]["local"]["models"] == [{"id": model, "vision": False}]


def test_setup_with_a_quote_in_an_answer_writes_a_config_that_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_ACP_HOME", str(tmp_path))
    answers = iter(["1", "", 'my "best" model', "n"])
    said: list[str] = []
    assert run_setup(said.append, lambda _question: next(answers)) == 0
    settings = load_settings({}, home=tmp_path)
    assert settings.model.default == 'local:my "best" model'


def test_a_config_that_would_not_load_leaves_the_old_one_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_ACP_HOME", str(tmp_path))
    (tmp_path / "config.toml").write_text("# old\n")
    answers = iter(["1", "ftp://127.0.0.1/v1", "qwen3", "n"])
    said: list[str] = []
    assert run_setup(said.append, lambda _question: next(answers)) == 1
    assert "left as it was" in said[-1]
    assert (tmp_path / "config.toml").read_text() == "# old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"], "no draft or backup left behind"
