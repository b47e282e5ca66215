"""A stdio MCP server gets the allow-list base and exactly the environment its entry declares: nothing of ours
that is not on the safe list, whatever its name, reaches it."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from fixtures.mcp_server import stdio_spec
from hermes_acp.exec.environment import SAFE_NAMES, EnvPolicy
from tests.fakes.agent_process import spawn_agent
from tests.mcp.support import START_S

pytestmark = pytest.mark.anyio

KEY = "sk-mcp-base-must-not-leak"


def test_the_base_is_the_safe_list_by_exact_name() -> None:
    env = {"PATH": "/bin", "HOME": "/h", "LC_TIME": "C", "GITHUB_PAT": KEY, "DATABASE_URL": f"postgres://u:{KEY}@h/db"}
    assert EnvPolicy().base(env) == {"PATH": "/bin", "HOME": "/h", "LC_TIME": "C"}
    assert EnvPolicy.of(["DATABASE_URL"]).base(env)["DATABASE_URL"].endswith("@h/db"), "pass_env lets one back"
    assert "LC_ANYTHING" not in SAFE_NAMES and not EnvPolicy().allows("LC_ANYTHING"), "no prefix matching"


async def test_a_stdio_server_sees_its_declared_env_and_nothing_else_of_ours(tmp_path: Path) -> None:
    declared = {"FIXTURE_VALUE": "declared", "SERVER_API_TOKEN": "its-own-token"}
    spec = stdio_spec("fixture", env=declared, tools=["whoami"])
    scenario = {
        "name": "whoami",
        "responses": [
            {"steps": [{"tool_call": {"id": "c", "name": "mcp__fixture__whoami", "arguments": {}}}]},
            {"steps": [{"text": "ok"}]},
        ],
    }
    ours = {
        "OPENAI_API_KEY": KEY,
        "GH_TOKEN": KEY,
        "HERMES_ACP_API_KEY": KEY,
        "DB_PASSWORD": KEY,
        "OTHER": KEY,
        "GITHUB_PAT": KEY,
        "AWS_ACCESS_KEY_ID": KEY,
        "DATABASE_URL": f"postgres://app:{KEY}@db/prod",
    }
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
    assert names <= {*SAFE_NAMES, *declared, "PYTHONPATH"}, names
