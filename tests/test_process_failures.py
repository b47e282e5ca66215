"""A failed turn over ACP, through the real process (docs/architecture.md §4.18): when the provider fails after its
retries (nothing answers, a 401, a 404 model, a 503, a stream cut for good) ``session/prompt`` answers with a
JSON-RPC error whose ``data`` says what failed (``kind``, ``provider``, ``model``, ``status``, ``message``,
``retries``): auth_required (-32000) for a refused key, -32603 for the rest; the notice stays in the transcript for
the person, every frame is valid ACP, and the session takes the next prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from tests.fakes.acp_client import data_of
from tests.fakes.agent_process import spawn_agent

pytestmark = pytest.mark.anyio

AFTER: dict[str, Any] = {"match": {"last_message_contains": "again"}, "steps": [{"text": "Back again."}]}
CASES: dict[str, tuple[dict[str, Any] | None, int, int | None]] = {
    "unreachable": (None, -32603, None),
    "unauthorized": ({"error": {"status": 401, "message": "Incorrect API key provided"}}, -32000, 401),
    "model_not_found": ({"error": {"status": 404, "message": "The model `m` does not exist"}}, -32603, 404),
    "server_error": ({"error": {"status": 503, "message": "overloaded"}}, -32603, 503),
    "stream_cut": (
        {"cut_after_chunks": 2, "chunk_size": 4, "steps": [{"text": "Half an answer that stops"}]},
        -32603,
        None,
    ),
}
"""Kind → (the scripted response to the first prompt, the JSON-RPC code, the HTTP status); None: nothing answers."""


@pytest.mark.parametrize("kind", list(CASES))
async def test_a_provider_failure_answers_the_prompt_with_an_error_whose_data_says_what_failed(
    tmp_path: Path, kind: str
) -> None:
    response, code, status = CASES[kind]
    scenario = {"name": kind, "responses": [AFTER, {"match": {"last_message_contains": "first"}, **(response or {})}]}
    down = {"HERMES_ACP_PROVIDERS__FX__BASE_URL": "http://127.0.0.1:9/v1"} if response is None else {}
    async with spawn_agent(tmp_path, scenario, env=down, max_retries=0) as agent:
        session_id = await agent.new_session()
        with pytest.raises(RequestError) as failed:
            await agent.prompt(session_id, "first")
        shown = agent.client.text(session_id)
        if response is not None:
            again = await agent.prompt(session_id, "again")
            assert again.stop_reason == "end_turn", "the session takes the next prompt"
    data = data_of(failed.value)
    assert failed.value.code == code
    assert (data["kind"], data["status"], data["provider"], data["model"], data["retries"]) == (
        kind,
        status,
        "fx",
        "fx:m",
        0,
    )
    assert str(failed.value).startswith("The model request failed: fx: ")
    assert data["message"] in str(failed.value)
    assert f"⚠ The model request failed: {data['message']}" in shown, "the person reads it in the transcript"


async def test_the_retries_made_are_counted_in_the_failure(tmp_path: Path) -> None:
    scenario = {
        "name": "503s",
        "responses": [{"repeat": True, "error": {"status": 503, "message": "overloaded", "retry_after": "0"}}],
    }
    async with spawn_agent(tmp_path, scenario, max_retries=2) as agent:
        session_id = await agent.new_session()
        with pytest.raises(RequestError) as failed:
            await agent.prompt(session_id, "first")
        asked = len(agent.model.requests())
    assert (data_of(failed.value)["retries"], asked) == (2, 3)
