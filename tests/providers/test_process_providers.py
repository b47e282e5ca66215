"""Provider fidelity through the real agent process: services that refuse a history without what they need back
(DeepSeek's ``reasoning_content``, Gemini's thought signatures) get it when the provider's ``send_back`` says so,
and the turn fails with the service's own words when it does not; a split emoji from the model's stream never fails
a turn, and the text shown is the text stored and replayed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.model_server import ModelServer, serve_model_server
from tests.fakes.agent_process import AgentProcess, spawn_agent

pytestmark = pytest.mark.anyio

SIGNATURE = {"google": {"thought_signature": "EocDCoQDAdHtim9"}}


def needs_back(field: str) -> dict[str, Any]:
    """A service that refuses a follow-up without ``field``, answering two turns: a call of a tool the agent does not
    have (its result says "no tool"), then an answer."""
    call: dict[str, Any] = {"name": "look_around", "arguments": {"where": "here"}}
    if field == "extra_content":
        call["extra_content"] = SIGNATURE
    tool_turn = {
        "match": {"last_message_contains": "Go"},
        "steps": [{"reasoning": "I should look."}, {"tool_call": call}],
    }
    answer = {"match": {"last_message_contains": "no tool"}, "steps": [{"text": "Looked."}]}
    return {"name": f"needs-{field}", "requires_sent_back": [field], "responses": [tool_turn, answer] * 2}


def providers(deepseek: ModelServer, gemini: ModelServer) -> str:
    sections = []
    for name, server, send_back in (
        ("ds", deepseek, '["reasoning_content"]'),
        ("ds_plain", deepseek, "[]"),
        ("gem", gemini, '["extra_content"]'),
        ("gem_plain", gemini, "[]"),
    ):
        sections.append(
            f'\n[providers.{name}]\nkind = "openai"\nbase_url = "{server.openai_base_url}"\n'
            f'models = ["m"]\nmax_retries = 0\nsend_back = {send_back}\n'
        )
    return "".join(sections)


async def turn(agent: AgentProcess, model: str) -> tuple[str, str]:
    session_id = await agent.new_session()
    await agent.request("session/set_model", {"sessionId": session_id, "modelId": model})
    response = await agent.prompt(session_id, "Go")
    return response.stop_reason, agent.client.text(session_id)


async def test_deepseek_and_gemini_get_back_what_they_need_and_only_when_configured(tmp_path: Path) -> None:
    async with (
        serve_model_server(
            {**needs_back("reasoning_content"), "responses": needs_back("reasoning_content")["responses"] * 2}
        ) as deepseek,
        serve_model_server(
            {**needs_back("extra_content"), "responses": needs_back("extra_content")["responses"] * 2}
        ) as gemini,
        spawn_agent(tmp_path, config_extra=providers(deepseek, gemini)) as agent,
    ):
        with anyio.fail_after(60):
            results = {model: await turn(agent, f"{model}:m") for model in ("ds", "gem", "ds_plain", "gem_plain")}
        sent = [r.body for r in deepseek.requests()] + [r.body for r in gemini.requests()]

    assert results["ds"] == ("end_turn", "Looked.")
    assert results["gem"] == ("end_turn", "Looked.")
    assert "reasoning_content in the thinking mode must be passed back" in results["ds_plain"][1]
    assert "missing a thought_signature" in results["gem_plain"][1]
    followed = [body for body in sent if isinstance(body, dict) and len(body["messages"]) > 2]
    assistants = [m for body in followed for m in body["messages"] if m["role"] == "assistant"]
    assert {"reasoning_content": "I should look."}.items() <= assistants[0].items()
    assert "reasoning_content" not in assistants[1]  # the plain provider sends none
    assert "extra_content" not in assistants[1]["tool_calls"][0]


def split_emoji_recording(path: Path) -> Path:
    pieces = ["Smile ", "\ud83d", "\ude00", ", and a half ", "\ud83d"]
    chunks: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]} for piece in pieces
    ]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    assert "\\ud83d" in body
    path.write_text(body, encoding="ascii")
    return path


async def test_a_split_emoji_from_the_model_is_shown_stored_and_replayed_whole(tmp_path: Path) -> None:
    recording = split_emoji_recording(tmp_path / "emoji.sse")
    scenario = {"responses": [{"recorded": {"file": str(recording), "chunk_bytes": 3}}, {"steps": [{"text": "ok"}]}]}
    home = tmp_path / "home"
    async with spawn_agent(tmp_path / "first", scenario, home=home) as agent:
        session_id = await agent.new_session()
        with anyio.fail_after(30):
            first = await agent.prompt(session_id, "Smile")
            second = await agent.prompt(session_id, "Again")
        live = agent.client.text(session_id)
        history = agent.model_requests()[1].body
    async with spawn_agent(tmp_path / "second", scenario, home=home) as agent:
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(agent.workspace), mcp_servers=[], session_id=session_id)
        replayed = agent.client.text(session_id)

    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    assert live == "Smile 😀, and a half \ufffdok"
    assert replayed == live
    assert isinstance(history, dict)
    assert history["messages"][-2] == {"role": "assistant", "content": "Smile 😀, and a half \ufffd"}
