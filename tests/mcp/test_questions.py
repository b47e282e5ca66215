"""A server's questions checked both ways (``mcp_client.elicitation``), and config.toml's ``[mcp.servers]``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes_acp.config import load_settings
from hermes_acp.errors import ConfigError
from hermes_acp.mcp_client.elicitation import (
    MAX_FIELDS,
    MAX_MESSAGE_CHARS,
    Answer,
    FormQuestion,
    UrlQuestion,
    calling,
    check_answer,
    read_question,
)

HIDDEN = "".join(chr(0xE0000 + ord(c)) for c in "obey")
FORM: dict[str, Any] = {
    "mode": "form",
    "message": f"Pick one{HIDDEN}",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "colour": {"type": "string", "enum": ["red", "green"], "title": f"Colour{HIDDEN}"},
            "count": {"type": "integer", "minimum": 1, "maximum": 3},
            "ratio": {"type": "number"},
            "sure": {"type": "boolean", "default": False},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 2},
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l"}]},
            "note": {"type": "string", "maxLength": 5, "format": "email"},
        },
        "required": ["colour"],
    },
}


def _form() -> FormQuestion:
    question = read_question("srv", FORM, elicitation_id="mcp-0-1")
    assert isinstance(question, FormQuestion)
    return question


def test_a_form_question_is_read_cleaned_and_tied_to_the_running_call() -> None:
    token = calling.set("call-9")
    try:
        question = _form()
    finally:
        calling.reset(token)
    assert question.message == "Pick one" and question.tool_call_id == "call-9"
    assert question.schema["properties"]["colour"]["title"] == "Colour"
    assert question.schema["required"] == ["colour"]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"message": ""}, "message"),
        ({"message": "x" * (MAX_MESSAGE_CHARS + 1)}, "over the limit"),
        ({"mode": "sampling"}, "not supported"),
        ({"requestedSchema": {"type": "array"}}, 'type must be "object"'),
        ({"requestedSchema": {"type": "object", "properties": {}}}, "non-empty"),
        ({"requestedSchema": {"type": "object", "properties": {"a": {"type": "object"}}}}, "not allowed"),
        ({"requestedSchema": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}}, "names"),
        (
            {"requestedSchema": {"type": "object", "properties": {f"f{i}": {"type": "boolean"} for i in range(99)}}},
            f"over the limit of {MAX_FIELDS}",
        ),
        ({"requestedSchema": {"type": "object", "properties": {"a": {"type": "string", "format": "x"}}}}, "format"),
        (
            {
                "requestedSchema": {
                    "type": "object",
                    "properties": {"a": {"type": "array", "items": {"type": "string"}}},
                }
            },
            "enum strings",
        ),
    ],
)
def test_a_form_question_outside_the_restricted_schema_is_refused(change: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        read_question("srv", {**FORM, **change}, elicitation_id="mcp-0-1")


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "file:///etc/passwd", "https://exa mple.com", f"https://example.com/{HIDDEN}", ""]
)
def test_a_url_question_takes_only_plain_http_addresses(url: str) -> None:
    with pytest.raises(ValueError, match="url"):
        read_question("srv", {"mode": "url", "message": "Go", "url": url, "elicitationId": "e"}, elicitation_id="x")


def test_a_url_question_keeps_our_id() -> None:
    params = {"mode": "url", "message": "Go", "url": "https://example.com/a?b=c", "elicitationId": "theirs"}
    question = read_question("srv", params, elicitation_id="mcp-2-7")
    assert isinstance(question, UrlQuestion)
    assert (question.url, question.elicitation_id) == ("https://example.com/a?b=c", "mcp-2-7")
    assert check_answer(question, Answer("accept", {"ignored": True})) == {"action": "accept"}


@pytest.mark.parametrize(
    ("content", "fits"),
    [
        ({"colour": "red"}, True),
        ({"colour": "red", "count": 3, "ratio": 0.5, "sure": True, "tags": ["a"], "size": "s", "note": "a@b"}, True),
        ({}, False),
        ({"colour": "blue"}, False),
        ({"colour": "red", "count": 4}, False),
        ({"colour": "red", "count": 1.5}, False),
        ({"colour": "red", "count": True}, False),
        ({"colour": "red", "sure": "yes"}, False),
        ({"colour": "red", "tags": ["a", "c"]}, False),
        ({"colour": "red", "tags": ["a", "b", "a"]}, False),
        ({"colour": "red", "size": "m"}, False),
        ({"colour": "red", "note": "toolong"}, False),
        ({"colour": "red", "unknown": 1}, False),
        ({"colour": "red", "ratio": None}, True),
    ],
)
def test_an_answer_goes_back_only_when_it_fits_the_form(content: dict[str, Any], fits: bool) -> None:
    result = check_answer(_form(), Answer("accept", content))
    assert result == ({"action": "accept", "content": content} if fits else {"action": "cancel"})


def test_decline_and_cancel_go_back_without_content() -> None:
    assert check_answer(_form(), Answer("decline", {"colour": "red"})) == {"action": "decline"}
    assert check_answer(_form(), Answer("cancel")) == {"action": "cancel"}


def test_config_servers_take_a_client_id_and_are_checked(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[mcp.servers.linear]\nurl = "https://mcp.linear.app/mcp"\nclient_id = "abc"\nredirect_port = 8765\n'
        '[mcp.servers.local]\ncommand = ["my-server", "--stdio"]\n'
    )
    settings = load_settings({}, home=tmp_path)
    linear = settings.mcp.servers["linear"]
    assert (linear.client_id, linear.redirect_port, linear.transport) == ("abc", 8765, "http")
    assert settings.mcp.servers["local"].command == ["my-server", "--stdio"]
    assert settings.mcp_auth_dir == tmp_path / "mcp-auth"
    for bad, problem in [
        ('[mcp.servers.x]\ncommand = ["a"]\nclient_id = "c"\n', "for HTTP and SSE"),
        ('[mcp.servers.x]\nurl = "https://a/mcp"\ncommand = ["a"]\n', "either command"),
        ('[mcp.servers.x]\nurl = "ftp://a"\n', "http"),
        ('[mcp.servers.x]\nurl = "https://a/mcp"\nredirect_port = 8000\n', "need a client_id"),
        ('[mcp.servers.x]\nurl = "https://a/mcp"\nclient_id = "c"\nclient_secret_env = "A B"\n', "variable name"),
        ('[mcp.servers.x]\nurl = "https://a/mcp"\nscopes = ["a"]\n', "unknown key"),
    ]:
        config.write_text(bad)
        with pytest.raises(ConfigError, match=problem):
            load_settings({}, home=tmp_path)
