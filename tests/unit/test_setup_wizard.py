"""`hermes-acp --setup` and the one config.toml writer it shares with the in-editor setup: it asks the service for its
models and sends the test request before it writes; the file loads, keeps the user's comments and other keys, a
backup is kept, answers are checked like the form's, nothing that failed is written, and nothing blocks without a
terminal. The service is the scripted model server; the setup runs in a worker thread, as in its own process."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.model_server import load_scenario, serve_model_server
from hermes_acp.config import load_settings
from hermes_acp.errors import ConfigError
from hermes_acp.onboarding.config_file import ProviderChoice, write_choice
from hermes_acp.onboarding.presets import PRESETS
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.setup_wizard import run_setup

pytestmark = pytest.mark.anyio

OPENAI = str(next(i for i, p in enumerate(PRESETS, start=1) if p.id == "openai"))
OLLAMA = str(next(i for i, p in enumerate(PRESETS, start=1) if p.id == "ollama"))
CUSTOM = str(next(i for i, p in enumerate(PRESETS, start=1) if p.id == "custom"))
LISTED = ["qwen3", "llama3.3"]
SERVES: dict[str, Any] = {
    "name": "serves",
    "models": LISTED,
    "responses": [{"repeat": True, "steps": [{"text": "OK"}]}],
}
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


async def _run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *answers: str, env: dict[str, str] | None = None
) -> tuple[int, list[str]]:
    monkeypatch.setenv("HERMES_ACP_HOME", str(tmp_path))
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    queue = iter(answers)
    said: list[str] = []

    def ask(_question: str) -> str:
        return next(queue)

    with anyio.fail_after(60):
        code = await anyio.to_thread.run_sync(run_setup, said.append, ask)
    return code, said


async def test_setup_asks_the_server_tests_the_model_and_writes_every_listed_one_keeping_each_comment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config.toml").write_text(COMMENTED)
    async with serve_model_server(SERVES) as server:
        key = {"FX_KEY": "k-fx"}
        code, said = await _run(tmp_path, monkeypatch, OPENAI, server.openai_base_url, "FX_KEY", "2", "y", env=key)
        requests = server.requests()
    assert code == 0, said
    assert "  2) llama3.3" in said, "the server's models, numbered"
    assert [(r.method, r.path) for r in requests] == [("GET", "/v1/models"), ("POST", "/v1/chat/completions")]
    assert requests[1].body["model"] == "llama3.3"
    text = (tmp_path / "config.toml").read_text()
    for line in COMMENTED.splitlines():
        if "#" in line and "default" not in line:
            assert line in text, f"kept: {line!r}"
    settings = load_settings(key, home=tmp_path)
    assert settings.providers["openai"].api_key_env == "FX_KEY"
    assert [m.id for m in settings.providers["openai"].models] == ["llama3.3", "qwen3"]
    assert settings.providers["openai"].models[0].vision
    assert settings.providers["mine"].timeout_s == 30
    assert settings.agent.max_turn_requests == 12
    assert ModelCatalog.from_settings(settings, key).default_id == "openai:llama3.3"
    assert (tmp_path / "config.toml.bak").read_text() == COMMENTED
    assert "k-fx" not in text


async def test_setup_without_a_terminal_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_ACP_HOME", str(tmp_path))

    def no_terminal(_question: str) -> str:
        raise EOFError

    said: list[str] = []
    assert run_setup(said.append, no_terminal) == 2
    assert "nothing was written" in said[-1]
    assert not (tmp_path / "config.toml").exists()


async def test_a_server_where_nothing_answers_is_refused_and_nothing_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serve_model_server(SERVES) as server:
        url = server.openai_base_url
    (tmp_path / "config.toml").write_text("# old\n")
    code, said = await _run(tmp_path, monkeypatch, OLLAMA, url, "")
    assert code == 1
    assert (
        said[-1] == f"Setup stopped: nothing answers at {url} — is Ollama running? `ollama serve`; nothing was written."
    )
    assert (tmp_path / "config.toml").read_text() == "# old\n"


async def test_a_refused_key_or_test_request_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    refusing = {**SERVES, "api_key": "right"}
    async with serve_model_server(refusing) as server:
        url = server.openai_base_url
        code, said = await _run(tmp_path, monkeypatch, OPENAI, url, "FX_KEY", env={"FX_KEY": "wrong"})
        assert code == 1
        assert said[-1] == (
            f"Setup stopped: the key in FX_KEY was refused (HTTP 401 from {url}); nothing was written."
        ), "stopped before the model is asked for"
        unknown = {**SERVES, "responses": [{"error": {"status": 404, "message": "model 'ghost' not found"}}]}
        server.set_scenario(load_scenario(unknown))
        code, said = await _run(tmp_path, monkeypatch, OLLAMA, url, "", "ghost", "n")
        assert code == 1
        assert said[-1] == (
            f"Setup stopped: the test request to ollama:ghost failed: {url} does not know the model 'ghost'"
            " (HTTP 404); nothing was written."
        )
    assert not (tmp_path / "config.toml").exists()


async def test_a_key_variable_not_set_in_the_terminal_asks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FX_UNSET_KEY", raising=False)
    async with serve_model_server(SERVES) as server:
        code, said = await _run(tmp_path, monkeypatch, OPENAI, server.openai_base_url, "FX_UNSET_KEY")
        requests = server.requests()
    assert code == 1 and "FX_UNSET_KEY is not set in this terminal" in said[-1]
    assert requests == [] and not (tmp_path / "config.toml").exists()


async def test_the_setup_starts_from_the_provider_in_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with serve_model_server(SERVES) as server:
        url = server.openai_base_url
        code, _ = await _run(tmp_path, monkeypatch, OLLAMA, url, "", "qwen3", "n")
        assert code == 0
        questions: list[str] = []
        queue = iter(["", "", "", "", ""])  # every answer: the offered default

        def ask(question: str) -> str:
            questions.append(question)
            return next(queue)

        with anyio.fail_after(60):
            code = await anyio.to_thread.run_sync(run_setup, lambda _line: None, ask)
    assert code == 0
    assert questions[:4] == [
        f"Service [{OLLAMA}]: ",
        f"Base URL [{url}]: ",
        "Environment variable holding the API key (-: none) [-]: ",
        "Model (number or id) [qwen3]: ",
    ]
    assert load_settings({}, home=tmp_path).model.default == "ollama:qwen3"


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


async def test_setup_with_a_quote_in_a_typed_model_id_writes_a_config_that_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serve_model_server({**SERVES, "list_models": False}) as server:
        code, said = await _run(tmp_path, monkeypatch, OLLAMA, server.openai_base_url, "", 'my "best" model', "n")
        [test] = [r for r in server.requests() if r.method == "POST"]
    assert code == 0, said
    assert any("did not list its models" in line for line in said)
    assert test.body["model"] == 'my "best" model'
    assert load_settings({}, home=tmp_path).model.default == 'ollama:my "best" model'


async def test_a_custom_anthropic_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with serve_model_server(SERVES) as server:
        url = server.base_url
        answers = (CUSTOM, "anthropic", url, "GW_API_KEY", "qwen3", "y")
        code, said = await _run(tmp_path, monkeypatch, *answers, env={"GW_API_KEY": "k-gw"})
        paths = [r.path for r in server.requests()]
    assert code == 0, said
    assert paths == ["/v1/models", "/v1/messages"]
    provider = load_settings({}, home=tmp_path).providers["custom"]
    assert (provider.kind, provider.base_url, provider.api_key_env) == ("anthropic", url, "GW_API_KEY")


@pytest.mark.parametrize(
    ("answers", "said"),
    [
        ((OLLAMA, "ftp://127.0.0.1/v1", ""), "must start with http:// or https://"),
        ((CUSTOM, "openai", "", ""), "needs its base URL"),
        (("99",), "unknown choice"),
    ],
)
async def test_answers_that_cannot_work_write_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answers: tuple[str, ...], said: str
) -> None:
    (tmp_path / "config.toml").write_text("# old\n")
    code, lines = await _run(tmp_path, monkeypatch, *answers)
    assert code == 2
    assert said.lower() in lines[-1].lower() and lines[-1].endswith("; nothing was written.")
    assert (tmp_path / "config.toml").read_text() == "# old\n"


async def test_an_empty_model_id_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with serve_model_server({**SERVES, "list_models": False}) as server:
        code, lines = await _run(tmp_path, monkeypatch, OLLAMA, server.openai_base_url, "", "", "n")
        posts = [r for r in server.requests() if r.method == "POST"]
    assert code == 2 and lines[-1] == "A model id is needed; nothing was written."
    assert posts == [] and not (tmp_path / "config.toml").exists()


async def test_a_key_typed_where_its_name_belongs_is_refused_and_not_repeated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-or-v1-0123456789abcdef0123456789abcdef"
    code, lines = await _run(tmp_path, monkeypatch, OPENAI, "", key)
    assert code == 2
    assert "NAME of an environment variable" in lines[-1]
    assert all(key not in line for line in lines)
    assert not (tmp_path / "config.toml").exists()
