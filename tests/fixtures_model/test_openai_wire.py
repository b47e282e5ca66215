"""The scripted server speaks OpenAI chat completions byte-for-byte in the shapes api.openai.com uses."""

from __future__ import annotations

from typing import Any

import pytest
from dirty_equals import IsInt

from fixtures.model_server import serve_model_server

from .support import client_for, openai_request, split_sse

pytestmark = pytest.mark.anyio

RESPONSE: dict[str, Any] = {
    "steps": [
        {"reasoning": "think"},
        {"text": "Hi there"},
        {"tool_call": {"id": "call_x", "name": "terminal", "arguments": {"command": "ls"}}},
    ],
    "chunk_size": 100,
    "usage": {"input_tokens": 50, "output_tokens": 9, "cached_tokens": 32, "reasoning_tokens": 4},
}


def chunk(delta: dict[str, Any], finish: str | None = None, *, usage: bool = True) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": "chatcmpl-fixture-0000",
        "object": "chat.completion.chunk",
        "created": IsInt(),
        "model": "m",
        "system_fingerprint": "fp_fixture",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage:
        payload["usage"] = None
    return payload


async def test_stream_with_usage_matches_the_service_shape() -> None:
    async with serve_model_server({"responses": [RESPONSE]}) as server, client_for(server) as client:
        body = openai_request(stream_options={"include_usage": True})
        response = await client.post("/v1/chat/completions", json=body)

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert response.headers["transfer-encoding"] == "chunked"
    assert response.headers["x-request-id"] == "req_fixture_0000"
    tool_head = {
        "index": 0,
        "id": "call_x",
        "type": "function",
        "function": {"name": "terminal", "arguments": ""},
    }
    assert split_sse(response.text) == [
        (None, chunk({"role": "assistant", "content": "", "refusal": None})),
        (None, chunk({"reasoning_content": "think"})),
        (None, chunk({"content": "Hi there"})),
        (None, chunk({"tool_calls": [tool_head]})),
        (None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"command": "ls"}'}}]})),
        (None, chunk({}, "tool_calls")),
        (
            None,
            {
                "id": "chatcmpl-fixture-0000",
                "object": "chat.completion.chunk",
                "created": IsInt(),
                "model": "m",
                "system_fingerprint": "fp_fixture",
                "choices": [],
                "usage": {
                    "prompt_tokens": 50,
                    "completion_tokens": 9,
                    "total_tokens": 59,
                    "prompt_tokens_details": {"cached_tokens": 32, "audio_tokens": 0},
                    "completion_tokens_details": {
                        "reasoning_tokens": 4,
                        "audio_tokens": 0,
                        "accepted_prediction_tokens": 0,
                        "rejected_prediction_tokens": 0,
                    },
                },
            },
        ),
        (None, "[DONE]"),
    ]


async def test_stream_without_include_usage_has_no_usage_at_all() -> None:
    scripted = {"steps": [{"text": "abcdef"}], "chunk_size": 4}
    async with serve_model_server({"responses": [scripted]}) as server, client_for(server) as client:
        response = await client.post("/chat/completions", json=openai_request())

    assert split_sse(response.text) == [
        (None, chunk({"role": "assistant", "content": "", "refusal": None}, usage=False)),
        (None, chunk({"content": "abcd"}, usage=False)),
        (None, chunk({"content": "ef"}, usage=False)),
        (None, chunk({}, "stop", usage=False)),
        (None, "[DONE]"),
    ]


async def test_non_streaming_completion_object() -> None:
    async with serve_model_server({"responses": [RESPONSE]}) as server, client_for(server) as client:
        response = await client.post("/v1/chat/completions", json=openai_request(stream=False))

    assert response.json() == {
        "id": "chatcmpl-fixture-0000",
        "object": "chat.completion",
        "created": IsInt(),
        "model": "m",
        "system_fingerprint": "fp_fixture",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Hi there",
                    "refusal": None,
                    "reasoning_content": "think",
                    "tool_calls": [
                        {
                            "id": "call_x",
                            "type": "function",
                            "function": {"name": "terminal", "arguments": '{"command": "ls"}'},
                        }
                    ],
                },
                "logprobs": None,
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {
            "prompt_tokens": 50,
            "completion_tokens": 9,
            "total_tokens": 59,
            "prompt_tokens_details": {"cached_tokens": 32, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 4,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
    }


@pytest.mark.parametrize(
    ("status", "error_type", "code"),
    [
        (400, "invalid_request_error", None),
        (401, "invalid_request_error", "invalid_api_key"),
        (404, "invalid_request_error", "model_not_found"),
        (429, "requests", "rate_limit_exceeded"),
        (500, "server_error", None),
    ],
)
async def test_error_responses_have_the_service_body_and_headers(
    status: int, error_type: str, code: str | None
) -> None:
    scripted = {"error": {"status": status, "message": "nope", "retry_after": 3}}
    async with serve_model_server({"responses": [scripted]}) as server, client_for(server) as client:
        response = await client.post("/v1/chat/completions", json=openai_request())

    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert response.headers["retry-after"] == "3"
    assert response.json() == {"error": {"message": "nope", "type": error_type, "param": None, "code": code}}


async def test_models_are_listed_in_the_openai_shape() -> None:
    async with serve_model_server({"models": ["a", "b"]}) as server, client_for(server) as client:
        response = await client.get("/v1/models")

    assert response.json() == {
        "object": "list",
        "data": [
            {"id": "a", "object": "model", "created": 0, "owned_by": "fixture"},
            {"id": "b", "object": "model", "created": 0, "owned_by": "fixture"},
        ],
    }
