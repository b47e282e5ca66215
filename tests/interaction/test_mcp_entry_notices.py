"""MCP entries that cannot be used (not an object, malformed, or of a kind we cannot run) are not lost: the session's
first turn tells the user, in the editor's order, which server was not started and why, and the session works."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_acp.providers.scripted import ScriptedProvider, text_reply
from tests.fakes.server import RawPair, open_raw

pytestmark = pytest.mark.anyio


async def _texts_until_response(raw: RawPair, request_id: int) -> list[str]:
    texts: list[str] = []
    while True:
        message = await raw.receive()
        if message.get("id") == request_id:
            assert message["result"]["stopReason"] == "end_turn"
            return texts
        update = message.get("params", {}).get("update", {})
        if update.get("sessionUpdate") == "agent_message_chunk":
            texts.append(update["content"]["text"])


async def test_skipped_entries_are_reported_in_the_session_in_the_editors_order(tmp_path: Path) -> None:
    servers = [
        5,
        {"type": "acp", "name": "inproc", "serverId": "s-1"},
        {"name": "nocmd", "args": [], "env": []},
        {"name": "badargs", "command": "x", "args": "--flag", "env": []},
    ]
    async with open_raw(tmp_path, provider=ScriptedProvider([text_reply("Ready.")])) as raw:
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        await raw.response(1)
        params = {"cwd": str(tmp_path), "mcpServers": servers, "_meta": {"editor.example/trace": "t-1"}}
        await raw.send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": params})
        session_id = (await raw.response(2))["result"]["sessionId"]
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hello"}]}
        await raw.send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt})
        texts = await _texts_until_response(raw, 3)
    assert texts == [
        "⚠ MCP server 'server1' was not started: its entry cannot be read (the entry is not an object).\n\n",
        "⚠ MCP server 'inproc' was not started: MCP servers of type 'acp' are not supported"
        " (stdio, http and sse are).\n\n",
        "⚠ MCP server 'nocmd' was not started: a stdio server needs a command.\n\n",
        "⚠ MCP server 'badargs' was not started: args must be a list of strings.\n\n",
        "Ready.",
    ]
