"""A stdio MCP server gets exactly the environment its entry declares, over a base that cannot carry secrets."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

from fixtures.mcp_server import stdio_spec
from hermes_acp.exec.environment import EnvPolicy
from hermes_acp.mcp_client.specs import BASE_ENV
from tests.fakes.agent_process import spawn_agent
from tests.mcp.support import START_S

pytestmark = pytest.mark.anyio

KEY = "sk-mcp-base-must-not-leak"


def test_the_base_is_the_sdks_and_holds_nothing_secret() -> None:
    assert tuple(DEFAULT_INHERITED_ENV_VARS) == BASE_ENV, "an SDK upgrade changed what servers inherit"
    assert not any(EnvPolicy().withheld(name) for name in BASE_ENV)


async def test_a_stdio_server_sees_its_declared_env_and_no_secret_of_ours(tmp_path: Path) -> None:
    declared = {"FIXTURE_VALUE": "declared", "SERVER_API_TOKEN": "its-own-token"}
    spec = stdio_spec("fixture", env=declared, tools=["whoami"])
    scenario = {
        "name": "whoami",
        "responses": [
            {"steps": [{"tool_call": {"id": "c", "name": "mcp__fixture__whoami", "arguments": {}}}]},
            {"steps": [{"text": "ok"}]},
        ],
    }
    ours = {"OPENAI_API_KEY": KEY, "GH_TOKEN": KEY, "HERMES_ACP_API_KEY": KEY, "DB_PASSWORD": KEY, "OTHER": KEY}
    async with spawn_agent(tmp_path, scenario, env=ours) as agent:
        session_id = await agent.new_session([spec])
        with anyio.fail_after(START_S):
            await agent.prompt(session_id, "who are you")
        [result] = [m for m in agent.model_requests()[1].body["messages"] if m.get("role") == "tool"]
    seen = json.loads(result["content"])
    names = set(seen["env"])
    assert {"FIXTURE_VALUE", "SERVER_API_TOKEN", "PYTHONPATH"} <= names, "the declared env is kept, secrets included"
    assert seen["fixture_value"] == "declared"
    assert not names & set(ours), f"leaked: {names & set(ours)}"
    assert names <= {*BASE_ENV, *declared, "PYTHONPATH", "LC_CTYPE"}, names
