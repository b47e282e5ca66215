"""``skipped_servers`` names each ``mcpServers`` entry the acp SDK would skip, and passes the shapes ACP defines;
``note_skipped_servers`` records them in the request's ``_meta`` for the agent, next to the editor's own keys."""

from __future__ import annotations

from typing import Any

import pytest
from acp import schema

from hermes_acp.protocol.mcp_entries import SKIPPED_SERVERS_META, note_skipped_servers, skipped_servers

STDIO = {"name": "fs", "command": "npx", "args": ["-y", "server"], "env": [{"name": "K", "value": "v"}]}
HTTP = {"type": "http", "name": "web", "url": "http://127.0.0.1:1/mcp", "headers": []}
ACP = {"type": "acp", "name": "inproc", "serverId": "s-1"}


@pytest.mark.parametrize("server", [STDIO, HTTP, {**HTTP, "type": "sse"}, {**STDIO, "type": "stdio"}, ACP])
def test_the_shapes_acp_defines_are_readable(server: dict[str, Any]) -> None:
    params = {"cwd": "/", "mcpServers": [server]}
    assert skipped_servers(params) == []
    assert len(schema.NewSessionRequest.model_validate(params).mcp_servers) == 1, "the SDK keeps it too"


@pytest.mark.parametrize(
    ("server", "name", "problem"),
    [
        ("fs", None, "not an object"),
        ({"command": "x", "args": [], "env": []}, None, "no string 'name'"),
        ({**STDIO, "args": "-y"}, "fs", "'args' must be a list of strings"),
        ({**STDIO, "env": [{"name": "K"}]}, "fs", "each 'env' entry needs string 'name' and 'value'"),
        ({**HTTP, "url": None}, "web", "a http server needs a string 'url'"),
        ({**HTTP, "headers": {}}, "web", "'headers' must be a list"),
        ({**HTTP, "type": "websocket"}, "web", "unknown server type 'websocket'"),
        ({**ACP, "serverId": 7}, "inproc", "an acp server needs a string 'serverId'"),
    ],
)
def test_each_entry_the_sdk_skips_is_named_with_its_problem(server: Any, name: str | None, problem: str) -> None:
    params = {"cwd": "/", "mcpServers": [STDIO, server]}
    assert skipped_servers(params) == [{"index": 1, "name": name, "problem": problem}]
    assert len(schema.NewSessionRequest.model_validate(params).mcp_servers) == 1, "the SDK skips exactly that one"


def test_skipped_entries_are_noted_in_meta_beside_the_editors_keys() -> None:
    message: dict[str, Any] = {
        "method": "session/load",
        "params": {"cwd": "/", "sessionId": "s", "mcpServers": [{"name": "half"}], "_meta": {"zed.dev/x": 1}},
    }
    note_skipped_servers(message)
    assert message["params"]["_meta"] == {
        "zed.dev/x": 1,
        SKIPPED_SERVERS_META: [{"index": 0, "name": "half", "problem": "a stdio server needs a string 'command'"}],
    }


@pytest.mark.parametrize(
    "message",
    [
        {"method": "session/new", "params": {"cwd": "/", "mcpServers": [STDIO]}},
        {"method": "session/prompt", "params": {"sessionId": "s", "mcpServers": ["odd"]}},
    ],
)
def test_nothing_is_noted_when_nothing_is_skipped(message: dict[str, Any]) -> None:
    before = repr(message)
    note_skipped_servers(message)
    assert repr(message) == before


def test_an_editor_cannot_supply_the_list_itself() -> None:
    forged = [{"index": 0, "name": "fs", "problem": "forged"}]
    message: dict[str, Any] = {
        "method": "session/new",
        "params": {"cwd": "/", "mcpServers": [STDIO], "_meta": {SKIPPED_SERVERS_META: forged}},
    }
    note_skipped_servers(message)
    assert message["params"]["_meta"] == {}
