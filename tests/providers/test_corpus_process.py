"""The recorded provider corpus through the real agent process: what the editor sees, and what goes back.

One ``python -m hermes_acp`` process is configured with one provider per kind of service (plain OpenAI-compatible
with ``send_back = []``; ``proxy`` with ``send_back`` unset, for the streams that carry what may go back (DeepSeek,
xAI, GLM, OpenRouter), served like every case from a loopback host that is not the service's own, as a LiteLLM or
one-api proxy would; an R1 model with ``think_tags``; Anthropic), all pointing at one scripted model server that
serves every recording byte for byte
in random HTTP chunks, matched on the model id (the case id). For each case a session switches to that model and
sends two prompts. The first turn plays the case's recordings (the tools they call are unknown to the agent, so
each call ends as a failed card and the turn goes on; after the last recording a plain "Done." answer follows
when the turn is not over yet). The test compares the frames the editor got (message text, thoughts, tool cards
with the provider's ids, usage, the stop reason, the error notice) with each note's ``expected`` block, and the
assistant messages in the second turn's request with what must go back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError

from fixtures.model_server import ModelServer, serve_model_server
from tests.fakes.acp_client import data_of
from tests.fakes.agent_process import AgentProcess, spawn_agent

from .corpus_cases import (
    CASES,
    FOLLOW_UP_TEXT,
    Case,
    Recording,
    editor_view,
    openai_sent_back,
    recorded_blocks,
    scenario,
    sent_back_blocks,
    sse_payloads,
)

pytestmark = pytest.mark.anyio

RETRIES = 1
NOTICE = "⚠ The model request failed"
RETRY = "⚠ Retrying the model request"


def provider_of(case: Case) -> str:
    if case.kind == "anthropic":
        return "an"
    if case.think_tags:
        return "hf"
    return "proxy" if case.carried else "oa"


def config(server: ModelServer) -> str:
    sections = []
    for provider, kind, extra in (
        ("oa", "openai", "send_back = []"),
        ("proxy", "openai", ""),
        ("hf", "openai", "send_back = []"),
        ("an", "anthropic", ""),
    ):
        base_url = server.openai_base_url if kind == "openai" else server.base_url
        models = ", ".join(
            f'{{ id = "{c.id}", think_tags = {"true" if c.think_tags else "false"} }}'
            for c in CASES
            if provider_of(c) == provider
        )
        sections.append(
            f'\n[providers.{provider}]\nkind = "{kind}"\nbase_url = "{base_url}"\nmax_retries = {RETRIES}\n'
            f"models = [{models}]\n{extra}\n"
        )
    return "".join(sections)


def corpus_scenario() -> dict[str, Any]:
    responses = []
    for case in CASES:
        responses.extend(scenario(case, chunk_bytes=64, seed=7, attempts=RETRIES + 1)["responses"])
    return {"name": "corpus", "models": [c.id for c in CASES], "responses": responses}


def first_turn_view(case: Case) -> dict[str, Any]:
    """What the editor should see of the first turn: text, thoughts, cards, stop reason, error."""
    text = thoughts = ""
    cards: dict[str, str] = {}
    titles: dict[str, str] = {}
    anonymous: list[str] = []
    error: str | None = None
    stop = "end_turn"
    goes_on = False
    for recording in case.recordings:
        expected = recording.expected
        shown_text, shown_thoughts = editor_view(recording, think_tags=case.think_tags)
        text, thoughts = text + shown_text, thoughts + shown_thoughts
        if expected["error"] is not None:
            error, goes_on = expected["error"]["message"], False
            break
        cards.update({call["id"]: "failed" for call in expected["tool_calls"]})
        titles.update({call["id"]: call["name"] for call in expected["tool_calls"]})
        cards.update(server_cards(case, recording))
        anonymous.extend("completed" for _ in executed_tools(case, recording))
        goes_on = bool(expected["tool_calls"]) or expected["stop"] == "pause_turn"
        if expected["stop"] in ("max_tokens", "refusal"):
            stop, goes_on = expected["stop"], False
            break
    if goes_on:
        text += FOLLOW_UP_TEXT
    return {
        "text": text,
        "thoughts": thoughts,
        "cards": cards,
        "titles": titles,
        "anonymous_cards": anonymous,
        "stop": stop,
        "error": error,
    }


def server_cards(case: Case, recording: Recording) -> dict[str, str]:
    """Anthropic's own tool calls: a completed card each, under the provider's id."""
    if case.kind != "anthropic":
        return {}
    blocks = recorded_blocks(recording.file)
    return {b["id"]: "completed" for b in blocks if b["type"].endswith("_tool_use") and b["type"] != "tool_use"}


def executed_tools(case: Case, recording: Recording) -> list[Any]:
    """Groq's built-in tool runs in a recording (their cards get ids of the agent's own making)."""
    if case.kind != "openai":
        return []
    indexes = {
        tool["index"]
        for payload in sse_payloads(recording.file)
        for choice in payload.get("choices") or []
        for tool in (choice.get("delta") or {}).get("executed_tools") or []
    }
    return sorted(indexes)


def sent_back(case: Case) -> list[Any]:
    """The assistant messages the second turn's request must carry (the answers of the first turn)."""
    messages: list[Any] = []
    for recording in case.recordings:
        expected = recording.expected
        if expected["error"] is not None:
            partial, _ = editor_view(recording, think_tags=case.think_tags)
            if partial:  # what was shown stays in the history
                messages.append(_assistant_text(case, partial))
            return messages
        if case.kind == "anthropic":
            content = sent_back_blocks(recording.file)
            if expected["stop"] == "pause_turn":
                content = [*content, {"type": "text", "text": FOLLOW_UP_TEXT}]
            if content:
                messages.append({"role": "assistant", "content": content})
        else:
            automatic = provider_of(case) == "proxy"
            message = openai_sent_back(recording, automatic=automatic, think_tags=case.think_tags)
            if message is not None:
                messages.append(message)
        if expected["stop"] in ("max_tokens", "refusal"):
            return messages
    if case.recordings[-1].expected["tool_calls"]:
        messages.append(_assistant_text(case, FOLLOW_UP_TEXT))
    return messages


def _assistant_text(case: Case, text: str) -> dict[str, Any]:
    if case.kind == "anthropic":
        return {"role": "assistant", "content": [{"type": "text", "text": text}]}
    return {"role": "assistant", "content": text}


def seen(agent: AgentProcess, session_id: str) -> dict[str, Any]:
    client = agent.client
    chunks = client.of_kind("agent_message_chunk", session_id)
    notices = [c["content"]["text"] for c in chunks if c["content"]["text"].startswith(NOTICE)]
    retries = [c["content"]["text"] for c in chunks if c["content"]["text"].startswith(RETRY)]
    text = "".join(c["content"]["text"] for c in chunks if not c["content"]["text"].startswith((NOTICE, RETRY)))
    return {
        "text": text,
        "retries": retries,
        "thoughts": client.text(session_id, "agent_thought_chunk"),
        "cards": client.cards(session_id),
        "notices": notices,
        "usage": [u["used"] for u in client.of_kind("usage_update", session_id)],
    }


async def play(agent: AgentProcess, server: ModelServer, case: Case) -> None:
    session_id = await agent.new_session()
    await agent.request("session/set_model", {"sessionId": session_id, "modelId": f"{provider_of(case)}:{case.id}"})
    view = first_turn_view(case)
    if view["error"] is None:
        stop = (await agent.prompt(session_id, "Go.")).stop_reason
    else:  # a failed turn answers with an error a script can see, and its notice stays in the transcript
        with pytest.raises(RequestError) as failed:
            await agent.prompt(session_id, "Go.")
        assert data_of(failed.value)["provider"] == provider_of(case)
        assert data_of(failed.value)["message"] in str(failed.value)
        stop = "end_turn"
    shown = seen(agent, session_id)
    assert stop == view["stop"]
    assert shown["text"] == view["text"]
    assert len(shown["retries"]) == (1 if case.repeat else 0), "a retried request is told, once per retry"
    assert shown["thoughts"] == view["thoughts"]
    cards = shown["cards"]
    assert {call_id: cards[call_id]["status"] for call_id in view["cards"] if call_id in cards} == view["cards"]
    assert {call_id: cards[call_id]["title"] for call_id in view["titles"]} == view["titles"]
    assert [card["status"] for call_id, card in cards.items() if call_id not in view["cards"]] == view[
        "anonymous_cards"
    ]
    if view["error"] is None:
        assert shown["notices"] == []
    else:
        assert len(shown["notices"]) == 1
        assert view["error"][:200] in shown["notices"][0]
    first_expected = case.recordings[0].expected
    if (
        first_expected["usage"] is not None
        and first_expected["error"] is None
        and first_expected["stop"] != "pause_turn"
    ):
        usage = first_expected["usage"]
        assert shown["usage"][0] == usage["input"] + usage["output"]  # what the context holds: prompt and answer
    second = await agent.prompt(session_id, "And now?")
    assert second.stop_reason == "end_turn"
    requests = [r for r in server.requests() if isinstance(r.body, dict) and r.body.get("model") == case.id]
    last = requests[-1].body
    assert isinstance(last, dict)
    assert [m for m in last["messages"] if m["role"] == "assistant"] == sent_back(case)


async def test_the_corpus_through_the_real_agent(tmp_path: Path) -> None:
    async with serve_model_server(corpus_scenario()) as server:
        async with spawn_agent(tmp_path, config_extra=config(server)) as agent:
            for case in CASES:
                with anyio.fail_after(60):
                    try:
                        await play(agent, server, case)
                    except AssertionError as exc:
                        raise AssertionError(f"{case.id}: {exc}") from exc
            agent.assert_json_rpc_only()
