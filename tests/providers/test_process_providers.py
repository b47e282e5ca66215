"""Provider fidelity through the real agent process: services that refuse a history without what they need back
(DeepSeek's ``reasoning_content``, Gemini's thought signatures) get it from any host without a setting, and once
more on demand when ``send_back = []`` held it back; a strict server that refuses the field gets the request once
more without it, and the session remembers; a split emoji from the model's stream never fails a turn, and the
text shown is the text stored and replayed."""

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


def needs_back(field: str, *, refuses: bool = False) -> dict[str, Any]:
    """A service that refuses a follow-up without ``field`` (or, ``refuses``, one that carries it), answering any
    number of turns: a call of a tool the agent does not have (its result says "no tool"), then an answer."""
    call: dict[str, Any] = {"name": "look_around", "arguments": {"where": "here"}}
    if field == "extra_content":
        call["extra_content"] = SIGNATURE
    tool_turn = {
        "match": {"last_message_contains": "Go"},
        "steps": [{"reasoning": "I should look."}, {"tool_call": call}],
    }
    answer = {"match": {"last_message_contains": "no tool"}, "steps": [{"text": "Looked."}]}
    refusal = {"refuses_sent_back": [field]} if refuses else {"requires_sent_back": [field]}
    return {"name": f"needs-{field}", **refusal, "responses": [tool_turn, answer] * 4}


def providers(deepseek: ModelServer, gemini: ModelServer, strict: ModelServer) -> str:
    sections = []
    for name, server, send_back in (
        ("ds", deepseek, None),
        ("ds_plain", deepseek, "[]"),
        ("gem", gemini, None),
        ("gem_plain", gemini, "[]"),
        ("strict", strict, None),
    ):
        sections.append(
            f'\n[providers.{name}]\nkind = "openai"\nbase_url = "{server.openai_base_url}"\n'
            f'models = ["m"]\nmax_retries = 0\n' + (f"send_back = {send_back}\n" if send_back else "")
        )
    return "".join(sections)


async def turns(agent: AgentProcess, model: str, count: int) -> list[tuple[str, str]]:
    """``count`` prompts in one new session on ``model``: each one's stop reason and the session's text so far."""
    session_id = await agent.new_session()
    await agent.request("session/set_model", {"sessionId": session_id, "modelId": model})
    results = []
    for _ in range(count):
        response = await agent.prompt(session_id, "Go")
        results.append((response.stop_reason, agent.client.text(session_id)))
    return results


async def test_what_a_service_needs_back_reaches_it_and_a_refusal_or_a_demand_is_answered_once(tmp_path: Path) -> None:
    async with (
        serve_model_server(needs_back("reasoning_content")) as deepseek,
        serve_model_server(needs_back("extra_content")) as gemini,
        serve_model_server(needs_back("reasoning_content", refuses=True)) as strict,
        spawn_agent(tmp_path, config_extra=providers(deepseek, gemini, strict)) as agent,
    ):
        with anyio.fail_after(90):
            results = {model: await turns(agent, f"{model}:m", 1) for model in ("ds", "ds_plain", "gem", "gem_plain")}
            results["strict"] = await turns(agent, "strict:m", 2)
        outcomes = {
            name: [r.outcome for r in server.requests()]
            for name, server in (("deepseek", deepseek), ("gemini", gemini), ("strict", strict))
        }
        strict_bodies = [r.body for r in strict.requests()]

    for model in ("ds", "ds_plain", "gem", "gem_plain"):
        assert results[model] == [("end_turn", "Looked.")], model
    assert results["strict"][1] == ("end_turn", "Looked.Looked.")
    # ds: accepted at once; ds_plain (send_back = []): refused once, then sent with the field
    assert outcomes["deepseek"] == ["completed", "completed", "completed", "missing_sent_back", "completed"]
    assert outcomes["gemini"] == ["completed", "completed", "completed", "missing_sent_back", "completed"]
    # the strict server refuses the field once; the session's later requests go without it from the start
    assert outcomes["strict"] == ["completed", "unknown_field", "completed", "completed", "completed"]
    assistants = [
        [m for m in body["messages"] if m["role"] == "assistant"] for body in strict_bodies if isinstance(body, dict)
    ]
    assert "reasoning_content" in assistants[1][0]
    assert all("reasoning_content" not in m for sent in assistants[2:] for m in sent)


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
