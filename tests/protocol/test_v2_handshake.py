"""Choosing v1 or v2 at ``initialize`` (``protocol/v2/version.py``, the TS SDK router's rules), reading a v2
client's requests (``protocol/v2/wire.py``), and the v2 ``initialize`` answer (``protocol/v2/handshake.py``), which
passes the v2 schema and its closed lists."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_acp.commands.command_set import Command
from hermes_acp.errors import InvalidParamsError
from hermes_acp.jsonrpc.boundary import ClientRequestError, to_wire
from hermes_acp.protocol import session_view
from hermes_acp.protocol.v2 import wire
from hermes_acp.protocol.v2.handshake import initialize_result
from hermes_acp.protocol.v2.render import available_commands, config_options, permission_request
from hermes_acp.protocol.v2.version import negotiate, repeat_refusal, request_id_refusal
from hermes_acp.protocol.wire import parse
from hermes_acp.providers.catalog import CatalogModel, ModelCatalog
from hermes_acp.sessions.switches import SWITCHES
from hermes_acp.turns.ports import PermissionChoice, PermissionQuestion
from tests.fakes.acp_schema import Direction, schema_dir, schema_problems
from tests.fakes.lanes import lane_missing


@pytest.mark.parametrize(
    ("requested", "answered"),
    [(2, 2), (3, 2), (65_535, 2), (1, 1), ("2", 2), (" 1", 1), ("2024-11-05", 1), (True, 1), (None, 1), (1.5, 1)],
)
def test_the_highest_configured_version_at_or_below_the_request(requested: object, answered: int) -> None:
    assert negotiate(requested) == answered


def test_a_version_below_every_configured_one_is_unsupported_naming_both() -> None:
    with pytest.raises(ClientRequestError) as raised:
        negotiate(0)
    assert to_wire(raised.value, "initialize") == {
        "code": -32022,
        "message": "Unsupported protocol version 0: this agent speaks 1, 2",
        "data": {"requested": 0, "supported": [1, 2]},
    }


@pytest.mark.parametrize("requested", [-1, 65_536, 10**20])
def test_a_number_that_is_no_protocol_version_is_invalid_params(requested: int) -> None:
    with pytest.raises(InvalidParamsError) as raised:
        negotiate(requested)
    assert to_wire(raised.value, "initialize")["code"] == -32602
    assert raised.value.field == "protocolVersion"


@pytest.mark.parametrize("requested", [0, 2, 7, "x", -5])
def test_with_only_v1_configured_every_request_gets_v1(requested: object) -> None:
    assert negotiate(requested, (1,)) == 1


def test_a_v2_connection_takes_a_repeat_for_2_before_other_requests_only() -> None:
    assert repeat_refusal(2, 2, other_requests=False) is None
    assert repeat_refusal(2, 5, other_requests=False) is None
    low = repeat_refusal(2, 1, other_requests=False)
    late = repeat_refusal(2, 2, other_requests=True)
    assert low is not None and low.code == -32600 and "version 2 or later" in low.message
    assert late is not None and late.code == -32600 and "after other requests" in late.message
    assert repeat_refusal(1, 1, other_requests=True) is None, "a v1 connection answers repeats as it always did"


def test_a_v2_initialize_needs_a_string_or_integer_id() -> None:
    assert request_id_refusal(2, 0) is None and request_id_refusal(2, "a") is None
    for bad in (None, 1.5, True):
        refused = request_id_refusal(2, bad)
        assert refused is not None and refused.code == -32600
    assert request_id_refusal(1, None) is None


V2_INIT = {
    "protocolVersion": 2,
    "info": {"name": "zed", "version": "1.0"},
    "capabilities": {"elicitation": {"form": {}}},
}


def test_a_v2_initialize_is_read_strictly_and_its_capabilities_leniently() -> None:
    params = wire.parse_initialize({**V2_INIT, "capabilities": {"auth": {"terminal": {}}, "elicitation": 7}})
    assert params.info.name == "zed"
    assert params.capabilities.terminal_auth and not params.capabilities.elicitation_form
    with pytest.raises(InvalidParamsError, match="info: required"):
        wire.parse_initialize({"protocolVersion": 2})
    assert not wire.parse_initialize(
        {**V2_INIT, "capabilities": {"auth": {"terminal": True}}}
    ).capabilities.terminal_auth


def test_a_later_version_is_read_leniently() -> None:
    params = wire.parse_initialize({"protocolVersion": 3, "info": "garbled"})
    assert (params.info.name, params.info.version) == ("unknown", "unknown")


def _frames(method: str, params: Any, result: Any) -> list[tuple[Direction, dict[str, Any]]]:
    return [
        ("to_agent", {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
        ("to_client", {"jsonrpc": "2.0", "id": 1, "result": result}),
    ]


def _valid(frames: list[tuple[Direction, dict[str, Any]]]) -> None:
    if not (schema_dir(2) / "schema.json").is_file():
        lane_missing("the ACP v2 schema is not installed: run `bash .ci/acp-schema-setup.sh`")
    pending: dict[tuple[Direction, Any], str] = {(d, m["id"]): m["method"] for d, m in frames if "method" in m}
    assert schema_problems(frames, pending=pending, version=2) == []


@pytest.mark.parametrize("client", [{}, {"auth": {"terminal": {}}}, {"elicitation": {"form": {}}}])
def test_the_v2_answer_passes_the_v2_schema(client: dict[str, Any]) -> None:
    params = wire.parse_initialize({**V2_INIT, "capabilities": client})
    remote = {"serverEpoch": "e1", "cursors": "session", "operations": {"retentionSeconds": "3600"}}
    result = initialize_result(params.capabilities, env={}, remote=remote)
    _valid(_frames("initialize", {**V2_INIT, "capabilities": client}, result))
    assert result["protocolVersion"] == 2 and result["info"]["name"] == "hermes-acp"
    assert "sse" not in result["capabilities"]["session"]["mcp"]
    assert result["_meta"]["hermes"]["remote"]["serverEpoch"] == "e1"
    methods = result["authMethods"]
    assert all("methodId" in m and "id" not in m and "_meta" not in m for m in methods)
    setup = next(m for m in methods if m["methodId"] == "hermes-setup")
    if client.get("auth"):
        assert setup["type"] == "terminal" and setup["args"] == ["--setup"]
    else:
        assert setup["type"] == "agent" and "args" not in setup
    forms = [m for m in methods if m["methodId"] == "hermes-setup-form"]
    assert bool(forms) == bool(client.get("elicitation"))


def test_session_requests_in_v2_shapes() -> None:
    new = parse(wire.NewSessionParams, {"cwd": "/w", "mcpServers": None})
    assert new.mcp_servers == []
    resume = parse(wire.ResumeSessionParams, {"sessionId": "s", "cwd": "/w", "replayFrom": {"type": "start"}})
    assert resume.replay_from is not None and resume.mcp_servers == []
    with pytest.raises(InvalidParamsError, match=r"replayFrom\.type"):
        parse(wire.ResumeSessionParams, {"sessionId": "s", "cwd": "/w", "replayFrom": {"type": "cursor"}})
    with pytest.raises(InvalidParamsError, match="prompt"):
        parse(wire.PromptParams, {"sessionId": "s", "prompt": []})
    fork = parse(wire.ForkSessionParams, {"sessionId": "s", "cwd": "/w", "_meta": {"messageId": "u1"}})
    assert fork.meta is not None and fork.meta.message_id == "u1"
    assert parse(wire.ToolCallCancelParams, {"sessionId": "s", "toolCallId": "c"}).tool_call_id == "c"
    assert parse(wire.TerminalCancelParams, {"sessionId": "s", "terminalId": "t"}).terminal_id == "t"
    assert parse(wire.LoginParams, {"methodId": "hermes-env"}).method_id == "hermes-env"


def test_a_config_option_value_must_match_its_type() -> None:
    switch = parse(wire.SetConfigOptionParams, {"sessionId": "s", "configId": "x", "type": "boolean", "value": True})
    assert switch.value is True
    assert (
        parse(wire.SetConfigOptionParams, {"sessionId": "s", "configId": "mode", "type": "id", "value": "a"}).value
        == "a"
    )
    for bad in ({"type": "boolean", "value": "yes"}, {"type": "id", "value": False}, {"type": "other", "value": 1}):
        with pytest.raises(InvalidParamsError):
            parse(wire.SetConfigOptionParams, {"sessionId": "s", "configId": "x", **bad})


def test_mcp_servers_of_a_type_we_do_not_run_or_named_twice_are_refused_by_name() -> None:
    fine = [{"type": "stdio", "name": "a", "command": "/bin/a"}, {"type": "http", "name": "b", "url": "http://x"}]
    assert wire.mcp_servers(fine) == fine
    with pytest.raises(InvalidParamsError) as raised:
        wire.mcp_servers([{"type": "sse", "name": "a", "url": "http://x"}])
    assert raised.value.data == {"type": "sse"} and raised.value.field == "mcpServers[0].type"
    with pytest.raises(InvalidParamsError, match="missing"):
        wire.mcp_servers([{"name": "a", "command": "/bin/a", "args": [], "env": []}])
    with pytest.raises(InvalidParamsError) as twice:
        wire.mcp_servers([*fine, {"type": "stdio", "name": "a", "command": "/bin/c"}])
    assert twice.value.data == {"name": "a"}


def test_a_v2_session_answer_carries_config_options_and_commands_in_v2_shapes() -> None:
    model = CatalogModel(
        id="p:m", provider_id="p", model="m", name="M", vision=False, context_window=1000, max_output_tokens=None,
        api_key_env=None, usable=True, efforts=("low", "high"), default_effort="low",
    )  # fmt: skip
    options = session_view.config_options("default", "p:m", ModelCatalog([model], "p:m"), None, [(SWITCHES[0], True)])
    commands = session_view.available_commands([Command("compact", "Compact", "focus"), Command("help", "Help")])
    result: dict[str, Any] = {
        "sessionId": "s",
        "configOptions": config_options(options),
        "availableCommands": available_commands(commands),
    }
    _valid(_frames("session/new", {"cwd": "/w"}, result))
    assert [o["configId"] for o in result["configOptions"]] == ["mode", "model", "effort", SWITCHES[0].id]
    assert all("id" not in o for o in result["configOptions"])
    assert result["availableCommands"] == [
        {"type": "command", "name": "compact", "description": "Compact", "input": {"type": "text", "hint": "focus"}},
        {"type": "command", "name": "help", "description": "Help"},
    ]


def test_a_permission_request_asks_in_words_of_its_own_about_the_call() -> None:
    question = PermissionQuestion(tool_call_id="call_run", title="Run `make test`", kind="execute", raw_input={"c": 1})
    choices = [
        PermissionChoice("allow_once", "Allow once", "allow_once"),
        PermissionChoice("reject_once", "Reject", "reject_once"),
    ]
    params = permission_request("s", question, choices)
    frames: list[tuple[Direction, dict[str, Any]]] = [
        ("to_client", {"jsonrpc": "2.0", "id": 4, "method": "session/request_permission", "params": params})
    ]
    _valid(frames)
    assert params["title"] == "Run this command?" and params["description"] == "Run `make test`"
    assert params["subject"] == {
        "type": "tool_call",
        "toolCall": {
            "toolCallId": "call_run",
            "title": "Run `make test`",
            "kind": "execute",
            "status": "pending",
            "rawInput": {"c": 1},
        },
    }
