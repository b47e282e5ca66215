"""The model fixture's recorded responses (byte for byte, in the HTTP chunks asked for), its context limit, and the
refusals of services that need something back (DeepSeek, Gemini)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fixtures.model_server import serve_model_server

from .support import client_for, openai_request, split_sse

pytestmark = pytest.mark.anyio

BODY = 'data: {"choices": [{"delta": {"content": "héllo 😀"}}]}\r\n\r\ndata: [DONE]\r\n\r\n'.encode()


@pytest.mark.parametrize(("chunk_bytes", "seed"), [(3, None), (5, 42), (None, None)])
async def test_a_recording_is_served_byte_for_byte_in_the_chunks_asked_for(
    tmp_path: Path, chunk_bytes: int | None, seed: int | None
) -> None:
    recording = tmp_path / "answer.sse"
    recording.write_bytes(BODY)
    spec = {"file": str(recording), "chunk_bytes": chunk_bytes, "chunk_seed": seed}
    async with serve_model_server({"responses": [{"recorded": spec}]}) as server, client_for(server) as client:
        pieces: list[bytes] = []
        async with client.stream("POST", "/v1/chat/completions", json=openai_request()) as response:
            async for piece in response.aiter_raw():
                pieces.append(piece)
        record = server.requests()[0]

    assert b"".join(pieces) == BODY
    assert response.headers["content-type"] == "text/event-stream"
    if chunk_bytes is not None:
        assert max(len(piece) for piece in pieces) <= chunk_bytes
        assert record.content_chunks == len(pieces)
    if seed is not None:
        assert len({len(piece) for piece in pieces}) > 1


async def test_a_recorded_error_answer_keeps_its_status(tmp_path: Path) -> None:
    recording = tmp_path / "error.json"
    recording.write_bytes(b'{"error": {"message": "nope"}}')
    spec = {"file": str(recording), "status": 503, "content_type": "application/json"}
    async with serve_model_server({"responses": [{"recorded": spec}]}) as server, client_for(server) as client:
        response = await client.post("/v1/chat/completions", json=openai_request())

    assert (response.status_code, response.content) == (503, recording.read_bytes())


def tool_turn(call: dict[str, Any], **assistant: Any) -> dict[str, Any]:
    return openai_request(
        messages=[
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call], **assistant},
            {"role": "tool", "tool_call_id": call["id"], "content": "ok"},
        ]
    )


CALL = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
SIGNED = {**CALL, "extra_content": {"google": {"thought_signature": "EocD"}}}


async def test_deepseek_and_gemini_refuse_a_history_without_what_they_need_back() -> None:
    scenario = {
        "requires_sent_back": ["reasoning_content", "extra_content"],
        "responses": [{"steps": [{"text": "fine"}], "repeat": True}],
    }
    async with serve_model_server(scenario) as server, client_for(server) as client:
        deepseek = await client.post("/v1/chat/completions", json=tool_turn(SIGNED))
        gemini = await client.post("/v1/chat/completions", json=tool_turn(CALL, reasoning_content="plan"))
        both = await client.post("/v1/chat/completions", json=tool_turn(SIGNED, reasoning_content="plan"))

    assert deepseek.status_code == 400
    assert deepseek.json()["error"]["message"] == (
        "The reasoning_content in the thinking mode must be passed back to the API."
    )
    assert gemini.status_code == 400
    assert gemini.json()[0]["error"]["status"] == "INVALID_ARGUMENT"
    assert "missing a thought_signature" in gemini.json()[0]["error"]["message"]
    assert both.status_code == 200
    assert [r.outcome for r in server.requests()] == ["missing_sent_back", "missing_sent_back", "completed"]


async def test_a_tool_call_step_can_carry_geminis_extra_content() -> None:
    step = {"tool_call": {"id": "c1", "name": "read_file", "arguments": {}, "extra_content": SIGNED["extra_content"]}}
    async with serve_model_server({"responses": [{"steps": [step]}]}) as server, client_for(server) as client:
        response = await client.post("/v1/chat/completions", json=openai_request())

    heads = [
        call
        for _, data in split_sse(response.text)
        if isinstance(data, dict)
        for choice in data["choices"]
        for call in choice["delta"].get("tool_calls", [])
        if "id" in call
    ]
    assert heads[0]["extra_content"] == SIGNED["extra_content"]
    assert server.requests()[0].outcome == "completed"
