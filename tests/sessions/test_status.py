"""``/status``: model, mode, the context meter with its breakdown, compactions, cost, MCP servers and their state,
directories and instruction files, answered from the session's state without a model call."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from hermes_acp.core import NoticeAdded, TextBlock, Usage
from hermes_acp.providers.scripted import ScriptedProvider, text_reply
from hermes_acp.turns.context import text_tokens, tools_tokens
from hermes_acp.turns.request import tool_specs
from tests.fakes.server import scripted_model

from .support import client_of, open_manager

pytestmark = pytest.mark.anyio


async def test_status_reads_the_session_without_asking_the_model(tmp_path: Path) -> None:
    workspace, extra = tmp_path / "workspace", tmp_path / "extra"
    workspace.mkdir()
    extra.mkdir()
    (workspace / "AGENTS.md").write_text("Run the tests before you say done.\n")
    priced = replace(scripted_model(context_window=16_000), input_price=1.0, output_price=2.0)
    provider = ScriptedProvider([text_reply("hi", usage=Usage(input_tokens=1_000, output_tokens=500))])
    servers: list[dict[str, object]] = [
        {"name": "ghost", "command": str(tmp_path / "no-such-server"), "args": []},
        {"name": "odd", "type": "websocket"},
    ]
    async with open_manager(tmp_path, provider, model=priced) as manager:
        session = await manager.new_session(str(workspace), [str(extra)], servers, client=client_of(manager))
        await session.prompt([TextBlock(text="hello")])
        with anyio.fail_after(20):
            await session.mcp.prepare_turn()  # the ghost server has failed by now
        await session.prompt([TextBlock(text="/status")])
        stored = [e.event for e in await session.services.store.load_events(session.id)]
        (shown,) = [e.text for e in stored if isinstance(e, NoticeAdded)][-1:]
        system = text_tokens(session.wiring.system_prompt)
        surface = session.services.tool_surface(session)
        tools = tools_tokens(tool_specs(surface))
    assert len(provider.requests) == 1  # the prompt's; /status asked nothing
    lines = shown.splitlines()
    assert lines[:3] == [
        "**Model:** scripted:model",
        "**Mode:** default",
        "**Context:** 1,500 of 16,000 tokens (9%); compacted above 80% (12,800)",
    ]
    assert (
        lines[3]
        == f"- system prompt ≈ {system:,}, tool schemas ≈ {tools:,} ({len(surface)} tools), history ≈ 11 (2 messages),"
        " images ≈ 0"
    )
    assert lines[4:6] == ["- compactions so far: 0", "**Cost so far:** $0.0020"]
    assert lines[6] == "**MCP servers:**"
    assert lines[7].startswith("- ghost: failed: ")
    assert (
        lines[8] == "- odd: not started (MCP servers of type 'websocket' are not supported (stdio, http and sse are))"
    )
    assert lines[9] == f"**Directories:** {workspace.resolve()}, {extra.resolve()}"
    assert lines[10:] == [
        "**Instruction files:**",
        f"- {workspace.resolve() / 'AGENTS.md'} (35 bytes)",
        "**Skills:** none",
        "**System prompt:** the agent's own",
        "**Queue:** empty",
    ]
