"""The setup's forms and how their answers are read: the editor's answers are outside input (wrong types, odd
URLs, a key typed where its variable's name belongs), and each problem is told without repeating a secret."""

from __future__ import annotations

import pytest

from hermes_acp.onboarding.forms import (
    Invalid,
    ModelAnswer,
    ServiceAnswer,
    model_form,
    read_model,
    read_service,
    service_form,
)
from hermes_acp.onboarding.presets import PRESETS


def test_the_service_form_offers_every_preset_and_asks_for_no_secret() -> None:
    _, schema = service_form()
    properties = schema["properties"]
    assert [o["const"] for o in properties["preset"]["oneOf"]] == [p.id for p in PRESETS]
    assert set(properties) == {"preset", "kind", "base_url", "api_key_env"}
    assert "NAME" in properties["api_key_env"]["title"].upper() and "not the key" in properties["api_key_env"]["title"]
    assert all(p.get("format") != "password" and p.get("writeOnly") is not True for p in properties.values())


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"preset": "ollama"}, ServiceAnswer(PRESETS[0], "openai", "http://127.0.0.1:11434/v1", None)),
        (
            {"preset": "openrouter", "api_key_env": ""},
            ServiceAnswer(PRESETS[4], "openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
        ),
        (
            {"preset": "openai", "api_key_env": "-"},
            ServiceAnswer(PRESETS[5], "openai", "https://api.openai.com/v1", None),
        ),
        (
            {"preset": "anthropic", "kind": "openai", "base_url": "https://gw.example/anthropic/"},
            ServiceAnswer(PRESETS[6], "anthropic", "https://gw.example/anthropic", "ANTHROPIC_API_KEY"),
        ),
        (
            {"preset": "custom", "kind": "anthropic", "base_url": "http://10.0.0.2:8080", "api_key_env": "GW_TOKEN"},
            ServiceAnswer(PRESETS[8], "anthropic", "http://10.0.0.2:8080", "GW_TOKEN"),
        ),
    ],
)
def test_a_service_answer_fills_in_the_preset(content: dict[str, object], expected: ServiceAnswer) -> None:
    assert read_service(content) == expected


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ({}, "choose one of the services"),
        ({"preset": 3}, "choose one of the services"),
        ({"preset": "../etc"}, "choose one of the services"),
        ({"preset": "custom"}, "needs its base URL"),
        ({"preset": "custom", "kind": "gemini", "base_url": "http://h"}, "openai or anthropic"),
        ({"preset": "ollama", "base_url": "javascript:alert(1)"}, "must start with http:// or https://"),
        ({"preset": "ollama", "base_url": "http://user:pw@h/v1"}, "user name or password"),
        ({"preset": "ollama", "base_url": "http://h/v1?key=abc"}, "query"),
        ({"preset": "ollama", "base_url": "http://h/v1\nHost: x"}, "one printable line"),
        ({"preset": "ollama", "base_url": "http://h/" + "a" * 3000}, "one printable line"),
        ({"preset": "ollama", "base_url": "http:///v1"}, "name a host"),
        ({"preset": "ollama", "api_key_env": "my_api_key"}, "NAME of an environment variable"),
        ({"preset": "ollama", "api_key_env": "PATH"}, "every command the agent runs inherits"),
    ],
)
def test_an_answer_that_cannot_work_is_named(content: dict[str, object], problem: str) -> None:
    answer = read_service(content)
    assert isinstance(answer, Invalid)
    assert problem in answer.problem


@pytest.mark.parametrize(
    "typed", ["sk-or-v1-9f8e7d6c5b4a39281706f5e4d3c2b1a0", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"]
)
def test_a_key_typed_as_the_variable_is_refused_without_being_repeated(typed: str) -> None:
    answer = read_service({"preset": "openrouter", "api_key_env": typed})
    assert isinstance(answer, Invalid)
    assert typed not in answer.problem and "neither stored nor sent" in answer.problem


def test_the_model_form_lists_what_the_server_listed_or_asks_for_text() -> None:
    message, schema = model_form("Ollama", ["a", "b"], None)
    assert [o["const"] for o in schema["properties"]["model"]["oneOf"]] == ["a", "b"]
    assert "2 listed" in message
    message, schema = model_form("Ollama", [], "http://h/v1/models answered HTTP 404")
    assert "oneOf" not in schema["properties"]["model"] and "HTTP 404" in message


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"model": " qwen3 ", "vision": True}, ModelAnswer("qwen3", True)),
        ({"model": "m", "vision": "yes"}, ModelAnswer("m", False)),
        ({"model": "m"}, ModelAnswer("m", False)),
    ],
)
def test_a_model_answer_is_read(content: dict[str, object], expected: ModelAnswer) -> None:
    assert read_model(content) == expected


@pytest.mark.parametrize("model", [None, "", "   ", 7, "a\x00b", "m\nn", "x" * 201])
def test_a_model_answer_that_is_no_model_id_is_refused(model: object) -> None:
    assert isinstance(read_model({"model": model}), Invalid)
