"""Helpers for the MCP tests: a tool context, running a session's servers directly, process liveness. Not a test
module."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from hermes_acp.mcp_client import McpServers, McpTimeouts
from hermes_acp.tools.base import AnyTool, ToolOutcome
from hermes_acp.tools.context import ToolContext, ToolEnvironment, Workspace
from tests.fakes.tools import approved

__all__ = ["START_S", "alive", "context", "find_tool", "run_tool", "running", "text_of"]

START_S = 60.0
"""Bound for a fixture server to start and answer (a Python process importing the mcp SDK: ~1.5 s here)."""


def context(tmp_path: Path) -> ToolContext:
    async def progress(_content: list[Any]) -> None:
        return None

    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    env = ToolEnvironment(session_id="s", workspace=Workspace(cwd=workspace), cache_dir=tmp_path / "cache")
    return ToolContext(env=env, turn_id="t", tool_call_id="c", mode="default", progress=progress)


@contextlib.asynccontextmanager
async def running(
    tmp_path: Path, specs: Sequence[Mapping[str, Any]], timeouts: McpTimeouts | None = None, *, wait: bool = True
) -> AsyncIterator[McpServers]:
    """A session's servers, started in this task (as the owner task does) and stopped on the way out."""
    cwd = tmp_path / "workspace"
    cwd.mkdir(exist_ok=True)
    servers = McpServers(specs, cwd=cwd, stderr_dir=tmp_path / "mcp-logs", timeouts=timeouts)
    async with servers.running():
        if wait:
            with anyio.fail_after(START_S):
                await servers.prepare_turn(wait_s=START_S)
        yield servers


def find_tool(servers: McpServers, name: str) -> AnyTool:
    tools = {t.name: t for t in servers.tools()}
    assert name in tools, f"{name} not offered; offered: {sorted(tools)}"
    return tools[name]


async def run_tool(tmp_path: Path, tool: AnyTool, timeout: float = START_S, **arguments: Any) -> ToolOutcome[Any]:
    """validate → approval (granted) → run, as the turn loop runs a call."""
    ctx = context(tmp_path)
    parsed = tool.validate(arguments)
    with anyio.fail_after(timeout):
        return await tool.run(parsed, await approved(tool, parsed, ctx), ctx)


def text_of(outcome: ToolOutcome[Any]) -> str:
    return "".join(getattr(p, "text", "") for p in outcome.parts)


def alive(pid: int) -> bool:
    """Whether a process with this pid exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = next((line.split()[1] for line in status.splitlines() if line.startswith("State:")), "?")
    return state != "Z"
