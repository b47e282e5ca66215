"""Through the real process: a hostile MCP server hides text of every kind in its tool names, descriptions, schemas,
results, resources, prompts and errors; neither the model's requests nor the editor's frames carry any of it, the
server still gets its tool's real name, and each removal is logged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.hostile_mcp import find_hidden, stdio_spec
from tests.fakes.agent_process import spawn_agent
from tests.mcp.support import START_S

pytestmark = pytest.mark.anyio

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("mcp__hostile__lookup", {"key": "alpha"}),
    ("mcp__hostile__explode", {}),
    ("mcp__hostile__fail", {}),
    ("mcp__hostile__read_resource", {"uri": "hostile://doc"}),
    ("mcp__hostile__list_resources", {}),
    ("mcp__hostile__list_prompts", {}),
    ("mcp__hostile__get_prompt", {"name": "greet", "arguments": {"who": "you"}}),
]


def scenario() -> dict[str, Any]:
    steps = [{"tool_call": {"id": f"call_{i}", "name": n, "arguments": a}} for i, (n, a) in enumerate(CALLS)]
    return {"name": "hostile", "responses": [{"steps": steps}, {"steps": [{"text": "done"}]}]}


async def test_no_hidden_text_reaches_the_model_or_the_editor(tmp_path: Path) -> None:
    journal = tmp_path / "hostile.jsonl"
    async with spawn_agent(tmp_path, scenario()) as agent:
        session_id = await agent.new_session([stdio_spec("hostile", journal)])
        with anyio.fail_after(START_S):
            response = await agent.prompt(session_id, "use the hostile tools")
        assert response.stop_reason == "end_turn"
        requests = agent.model_requests()
        assert len(requests) == 2
        offered = agent.offered_tools()[0]
        assert {name for name, _ in CALLS} <= set(offered), offered
        for record in requests:
            assert find_hidden(record.body) == [], "hidden text reached the model"
        frames = [json.loads(line) for line in agent.stdout_lines]
        assert find_hidden(frames) == [], "hidden text reached the editor"
        cards = agent.client.cards(session_id)
        assert all(cards[f"call_{i}"]["status"] in ("completed", "failed") for i in range(len(CALLS)))
        assert cards["call_1"]["status"] == "failed"
        results = json.dumps(requests[1].body["messages"], ensure_ascii=False)
        for visible in ("value of alpha", "embedded", "exploded", "failure", "resource", "Hello", "Greet."):
            assert visible in results, visible
        tools = {tool["function"]["name"]: tool["function"] for tool in requests[0].body["tools"]}
        lookup = tools["mcp__hostile__lookup"]
        assert lookup["description"] == "Look a key up."
        assert lookup["parameters"]["properties"]["key"]["enum"] == ["alpha", "beta"]
        assert lookup["parameters"]["properties"]["options"]["properties"]["depth"]["description"] == "How deep."
    calls = [json.loads(line) for line in journal.read_text().splitlines()]
    names = [c["params"]["name"] for c in calls if c["method"] == "tools/call"]
    assert names[0] == "look\u200bup", "the server is called by its own name for the tool"
    log = (tmp_path / "agent-stderr.log").read_text()
    removed = [json.loads(line) for line in log.splitlines() if "hidden text removed" in line]
    assert removed, "each removal is logged"
    assert all(r["server"] == "hostile" for r in removed)
    sources = {r["source"].split(" ")[0] for r in removed}
    assert {"tools/list", "tools/call", "resources/read", "prompts/get"} <= sources, sources
    listing = next(r for r in removed if r["source"].startswith("tools/list (Look up"))
    assert listing["tag"] > 0 and listing["bidi"] > 0 and listing["zero_width"] > 0
    assert listing["variation_selector"] > 0
