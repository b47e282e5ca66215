"""What ``/mcp`` shows and does, at the MCP client: each server's state, error and offered tools, and a reconnect
that replaces a live connection (a new server process) or retries a failed one, through the supervised connection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.mcp_server import read_journal, stdio_spec
from hermes_acp.mcp_client import NotConnected, ServerStatus
from tests.mcp.support import START_S, alive, find_tool, run_tool, running, text_of

pytestmark = pytest.mark.anyio

HELPERS = ["echo", "get_prompt", "list_prompts", "list_resources", "read_resource"]
"""The fixture's ``echo`` and the helpers for its resources and prompts, in name order."""


async def test_status_names_each_servers_state_error_and_offered_tools(tmp_path: Path) -> None:
    specs: list[dict[str, Any]] = [
        stdio_spec("good", tmp_path / "journal.jsonl", tools=["echo", "add_note"]),
        {"name": "missing", "command": str(tmp_path / "no-such-program"), "args": [], "env": []},
        {"type": "acp", "name": "inproc", "id": "x"},
    ]
    async with running(tmp_path, specs) as servers:
        statuses = servers.status()
    assert statuses == [
        ServerStatus("good", "stdio", "ready", None, tuple(f"mcp__good__{name}" for name in ["add_note", *HELPERS])),
        ServerStatus("missing", "stdio", "failed", f"command not found: {str(tmp_path / 'no-such-program')!r}", ()),
        ServerStatus(
            "inproc", "-", "not started", "MCP servers of type 'acp' are not supported (stdio, http and sse are)", ()
        ),
    ]


async def test_reconnect_replaces_a_live_connection_with_a_new_server_process(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    async with running(tmp_path, [stdio_spec("fixture", journal, tools=["echo", "whoami"])]) as servers:
        with anyio.fail_after(START_S):
            await servers.reconnect("fixture")
        (status,) = servers.status()
        echoed = await run_tool(tmp_path, find_tool(servers, "mcp__fixture__echo"), text="after")
    starts = read_journal(journal).of("start")
    assert len(starts) == 2 and starts[0]["pid"] != starts[1]["pid"], "a second process, the first one gone"
    tools = tuple(f"mcp__fixture__{name}" for name in sorted([*HELPERS, "whoami"]))
    assert status == ServerStatus("fixture", "stdio", "ready", None, tools)
    assert not alive(starts[0]["pid"])
    assert text_of(echoed) == "after"


async def test_reconnecting_a_server_that_cannot_start_says_why_and_an_unknown_name_is_refused(
    tmp_path: Path,
) -> None:
    missing = {"name": "missing", "command": str(tmp_path / "no-such-program"), "args": [], "env": []}
    async with running(tmp_path, [missing]) as servers:
        attempts = servers.connection("missing").attempts  # type: ignore[union-attr]
        with anyio.fail_after(START_S), pytest.raises(NotConnected, match="unavailable: command not found"):
            await servers.reconnect("missing")
        assert servers.connection("missing").attempts == attempts + 1  # type: ignore[union-attr]
        with pytest.raises(KeyError):
            await servers.reconnect("nope")
