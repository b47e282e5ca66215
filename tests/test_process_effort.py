"""Thinking effort through the real process, with the request bodies the model server recorded: a model with
``efforts`` gets a ``thought_level`` option, sent as ``reasoning_effort`` (OpenAI-compatible) or as a thinking budget
(Anthropic); the system prompt and tool schemas stay byte-identical when it changes; a model without efforts gets no
option and no parameter; the choice survives a fork and a reload, and falls back to a model's default when that
model lacks it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError

from fixtures.model_server import ModelServer, serve_model_server
from hermes_acp.providers._anthropic_request import THINKING_BUDGETS
from tests.fakes.agent_process import MODEL, AgentProcess, spawn_agent

pytestmark = pytest.mark.anyio

OPENAI_THINKER = "fe:think"
ANTHROPIC_THINKER = "fa:claude"
SCENARIO: dict[str, Any] = {"responses": [{"repeat": True, "steps": [{"text": "Thought about it."}]}]}


def providers(server: ModelServer) -> str:
    return (
        f'\n[providers.fe]\nkind = "openai"\nbase_url = "{server.openai_base_url}"\nmax_retries = 0\n'
        'models = [{ id = "think", efforts = ["low", "medium", "high"], default_effort = "medium" }]\n'
        f'\n[providers.fa]\nkind = "anthropic"\nbase_url = "{server.base_url}"\nmax_retries = 0\n'
        'models = [{ id = "claude", max_output_tokens = 32000, efforts = ["low", "medium"], default_effort = "low" }]\n'
    )


def effort_option(options: list[Any]) -> dict[str, Any] | None:
    for option in options:
        shown = option if isinstance(option, dict) else option.model_dump(mode="json", by_alias=True, exclude_none=True)
        if shown["id"] == "effort":
            return shown
    return None


def latest_options(agent: AgentProcess, session_id: str) -> list[dict[str, Any]]:
    return agent.client.of_kind("config_option_update", session_id)[-1]["configOptions"]  # type: ignore[no-any-return]


async def choose(agent: AgentProcess, session_id: str, config_id: str, value: str) -> list[Any]:
    with anyio.fail_after(30):
        response = await agent.conn.set_config_option(config_id=config_id, session_id=session_id, value=value)
    return list(response.config_options)


def sent(server: ModelServer, index: int) -> dict[str, Any]:
    body = server.requests()[index].body
    assert isinstance(body, dict)
    return body


async def test_effort_reaches_both_provider_kinds_and_nothing_else_changes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with serve_model_server(SCENARIO) as server:
        async with spawn_agent(tmp_path, home=home, config_extra=providers(server)) as agent:
            session_id = await agent.new_session()
            with anyio.fail_after(30):
                plain = await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[])
            assert effort_option(plain.config_options or []) is None, "a model without efforts has no option"
            await agent.prompt(session_id, "plain")
            plain_body = agent.model_requests()[-1].body
            with pytest.raises(RequestError, match="unknown option 'effort'; this session's options: mode, model"):
                await choose(agent, session_id, "effort", "high")

            switched = effort_option(await choose(agent, session_id, "model", OPENAI_THINKER))
            announced = effort_option(latest_options(agent, session_id))
            await agent.prompt(session_id, "think")
            chosen = effort_option(await choose(agent, session_id, "effort", "high"))
            announced_high = effort_option(latest_options(agent, session_id))
            await agent.prompt(session_id, "think harder")
            with pytest.raises(RequestError, match="'xhigh' is not a thinking effort of fe:think"):
                await choose(agent, session_id, "effort", "xhigh")

            fallback = effort_option(await choose(agent, session_id, "model", ANTHROPIC_THINKER))
            await agent.prompt(session_id, "think on claude")
            await choose(agent, session_id, "effort", "medium")
            await agent.prompt(session_id, "think more on claude")
            with anyio.fail_after(30):
                forked = await agent.conn.fork_session(cwd=str(agent.workspace), session_id=session_id, mcp_servers=[])
            back = await choose(agent, session_id, "model", MODEL)
        async with spawn_agent(tmp_path / "second", home=home, config_extra=providers(server)) as agent:
            with anyio.fail_after(30):
                reloaded = await agent.conn.load_session(
                    cwd=str(agent.workspace), session_id=forked.session_id, mcp_servers=[]
                )

    assert "reasoning_effort" not in plain_body and "thinking" not in plain_body
    assert switched is not None and switched["category"] == "thought_level" and switched["type"] == "select"
    assert switched["currentValue"] == "medium", "the model's default"
    assert [o["value"] for o in switched["options"]] == ["low", "medium", "high"]
    assert announced == switched, "config_option_update after the switch"
    assert chosen is not None and chosen["currentValue"] == "high"
    assert announced_high == chosen, "config_option_update after the choice"
    medium, high = sent(server, 0), sent(server, 1)
    assert (medium["reasoning_effort"], high["reasoning_effort"]) == ("medium", "high")
    assert medium["messages"][0] == high["messages"][0], "the system prompt is byte-identical"
    assert medium["tools"] == high["tools"], "the tool schemas are byte-identical"

    assert fallback is not None and fallback["currentValue"] == "low", "high is not claude's: its default"
    low_claude, medium_claude = sent(server, 2), sent(server, 3)
    assert low_claude["thinking"] == {"type": "enabled", "budget_tokens": THINKING_BUDGETS["low"]}
    assert medium_claude["thinking"] == {"type": "enabled", "budget_tokens": THINKING_BUDGETS["medium"]}
    assert low_claude["system"] == medium_claude["system"] and low_claude["tools"] == medium_claude["tools"]
    assert "reasoning_effort" not in low_claude

    assert effort_option(forked.config_options or []) == {**fallback, "currentValue": "medium"}, "a fork keeps it"
    assert effort_option(back) is None, "a model without efforts drops the option"
    shown = effort_option(reloaded.config_options or [])
    assert shown is not None and shown["currentValue"] == "medium", "a reload keeps it"
