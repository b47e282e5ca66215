"""``unreadable_servers`` names each ``mcpServers`` entry the acp SDK would skip, and passes the shapes ACP defines."""

from __future__ import annotations

from typing import Any

import pytest
from acp import schema

from hermes_acp.protocol.mcp_entries import unreadable_servers

STDIO = {"name": "fs", "command": "npx", "args": ["-y", "server"], "env": [{"name": "K", "value": "v"}]}
HTTP = {"type": "http", "name": "web", "url": "http://127.0.0.1:1/mcp", "headers": []}


@pytest.mark.parametrize("server", [STDIO, HTTP, {**HTTP, "type": "sse"}, {**STDIO, "type": "stdio"}])
def test_the_shapes_acp_defines_are_readable(server: dict[str, Any]) -> None:
    params = {"cwd": "/", "mcpServers": [server]}
    assert unreadable_servers(params) == []
    assert len(schema.NewSessionRequest.model_validate(params).mcp_servers) == 1, "the SDK keeps it too"


@pytest.mark.parametrize(
    ("server", "problem"),
    [
        ("fs", "mcpServers[1]: not an object"),
        ({"command": "x", "args": [], "env": []}, "mcpServers[1]: no string 'name'"),
        ({**STDIO, "args": "-y"}, "mcpServers[1] (fs): 'args' must be a list of strings"),
        ({**STDIO, "env": [{"name": "K"}]}, "mcpServers[1] (fs): each 'env' entry needs string 'name' and 'value'"),
        ({**HTTP, "url": None}, "mcpServers[1] (web): a http server needs a string 'url'"),
        ({**HTTP, "headers": {}}, "mcpServers[1] (web): 'headers' must be a list"),
        ({**HTTP, "type": "websocket"}, "mcpServers[1] (web): unknown server type 'websocket'"),
    ],
)
def test_each_entry_the_sdk_skips_is_named_with_its_problem(server: Any, problem: str) -> None:
    params = {"cwd": "/", "mcpServers": [STDIO, server]}
    assert unreadable_servers(params) == [problem]
    assert len(schema.NewSessionRequest.model_validate(params).mcp_servers) == 1, "the SDK skips exactly that one"
