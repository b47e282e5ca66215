"""Lone surrogates from an MCP server, over each transport: the call answers at once, with the text made safe.

The fixture's ``surrogates`` tool puts ``"\\ud800"`` escapes, a reversed pair and a pair split across two content
blocks on the wire, in a result or in a JSON-RPC error's message. The SDK's decoder refuses such a message; left
at that, the request waited for its timeout (121 s in a turn). The call timeout here is far beyond the test's own
bound, so a stall fails the test instead of ending in a timeout error.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import pytest

from fixtures.mcp_server import read_journal, serve_http, stdio_spec
from hermes_acp.errors import ToolError
from hermes_acp.mcp_client import McpServers, McpTimeouts
from hermes_acp.mcp_client._surrogates import mend_body, mend_json
from tests.mcp.support import START_S, find_tool, run_tool, running, text_of

pytestmark = pytest.mark.anyio

Transport = Literal["stdio", "http", "sse"]
NEVER = McpTimeouts(connect_s=START_S, call_s=3600, list_s=3600)
"""A stall would outlast the test's bound (``START_S``) by far."""
SAFE_RESULT = (
    "lone \ufffd here, a reversed pair \ufffd\ufffd, and a pair split across blocks: \ufffd\n"
    "\ufffd and a real pair \U0001f600"
)


@asynccontextmanager
async def fixture_servers(tmp_path: Path, transport: Transport) -> AsyncIterator[McpServers]:
    journal = tmp_path / "journal.jsonl"
    if transport == "stdio":
        async with running(tmp_path, [stdio_spec("fixture", journal)], NEVER) as servers:
            yield servers
        return
    async with serve_http(transport, journal) as server:
        spec: dict[str, Any] = {"type": transport, "name": "fixture", "url": server.url, "headers": []}
        async with running(tmp_path, [spec], NEVER) as servers:
            yield servers


@pytest.mark.parametrize("transport", ["stdio", "http", "sse"])
async def test_lone_surrogates_in_a_result_are_made_safe_at_once(tmp_path: Path, transport: Transport) -> None:
    async with fixture_servers(tmp_path, transport) as servers:
        tool = find_tool(servers, "mcp__fixture__surrogates")
        outcome = await run_tool(tmp_path, tool, where="result")
        after = await run_tool(tmp_path, find_tool(servers, "mcp__fixture__echo"), text="still here")
        [conn] = servers.connections
        connections = conn.connections
    assert text_of(outcome) == SAFE_RESULT and not outcome.failed
    text_of(outcome).encode("utf-8")  # the text can be written anywhere
    assert text_of(after) == "still here" and connections == 1, "the connection was not dropped"
    assert [c["tool"] for c in read_journal(tmp_path / "journal.jsonl").calls()] == ["surrogates", "echo"]


@pytest.mark.parametrize("transport", ["stdio", "http", "sse"])
async def test_a_lone_surrogate_in_an_error_message_is_made_safe_at_once(tmp_path: Path, transport: Transport) -> None:
    async with fixture_servers(tmp_path, transport) as servers:
        tool = find_tool(servers, "mcp__fixture__surrogates")
        with pytest.raises(ToolError) as caught:
            await run_tool(tmp_path, tool, where="error")
    assert str(caught.value) == "fixture/surrogates: the server answered with an error: refused \ufffd here"


async def _body(chunks: list[bytes], *, events: bool) -> bytes:
    async def stream() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    return b"".join([part async for part in mend_body(stream(), events=events)])


async def test_event_streams_are_mended_line_by_line_across_chunk_boundaries() -> None:
    event = b'event: message\r\ndata: {"text":"a\\ud800b","pair":"\\ud83d\\ude00","kept":"\\\\ud800"}\r\n\r\n'
    clean = 'event: message\r\ndata: {"text":"a\ufffdb","pair":"\U0001f600","kept":"\\\\ud800"}\r\n\r\n'.encode()
    untouched = b'data: {"text":"plain \\\\ud800 is text, not an escape"}\n\n'
    whole = event + untouched
    for cut in (1, 17, 30, len(event) - 1, len(event) + 5):
        assert await _body([whole[:cut], whole[cut:]], events=True) == clean + untouched, cut
    body = b'{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x\\udfff"}}'
    assert await _body([body[:20], body[20:]], events=False) == (
        '{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x\ufffd"}}'.encode()
    )
    assert mend_json(b'{"a": "no surrogates"}') is None and mend_json(b"not json \\ud800") is None
