"""The scripted server speaks the Anthropic Messages API in the shapes api.anthropic.com uses."""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.model_server import serve_model_server

from .support import anthropic_request, client_for, split_sse

pytestmark = pytest.mark.anyio

RESPONSE: dict[str, Any] = {
    "steps": [
        {"reasoning": "think", "signature": "sig-A"},
        {"redacted_thinking": "opaque"},
        {"text": "Hi there"},
        {"tool_call": {"id": "toolu_x", "name": "terminal", "arguments": {"command": "ls"}}},
    ],
    "chunk_size": 100,
    "usage": {"input_tokens": 50, "output_tokens": 9, "cached_tokens": 30, "cache_write_tokens": 12},
}
HEADERS = {"anthropic-version": "2023-06-01"}


async def test_stream_matches_the_service_event_sequence() -> None:
    async with serve_model_server({"responses": [RESPONSE]}) as server, client_for(server) as client:
        response = await client.post("/v1/messages", json=anthropic_request(), headers=HEADERS)

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert response.headers["request-id"] == "req_fixture_0000"
    usage = {"input_tokens": 8, "cache_creation_input_tokens": 12, "cache_read_input_tokens": 30}
    assert split_sse(response.text) == [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_fixture_0000",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {**usage, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        ),
        ("ping", {"type": "ping"}),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "think"}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig-A"}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "redacted_thinking", "data": "opaque"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "Hi there"}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 2}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 3,
                "content_block": {"type": "tool_use", "id": "toolu_x", "name": "terminal", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": ""}},
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 3,
                "delta": {"type": "input_json_delta", "partial_json": '{"command": "ls"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 3}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 9},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


async def test_non_streaming_message_object() -> None:
    async with serve_model_server({"responses": [RESPONSE]}) as server, client_for(server) as client:
        response = await client.post("/v1/messages", json=anthropic_request(stream=False), headers=HEADERS)

    assert response.json() == {
        "id": "msg_fixture_0000",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [
            {"type": "thinking", "thinking": "think", "signature": "sig-A"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Hi there"},
            {"type": "tool_use", "id": "toolu_x", "name": "terminal", "input": {"command": "ls"}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 8,
            "cache_creation_input_tokens": 12,
            "cache_read_input_tokens": 30,
            "output_tokens": 9,
        },
    }


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (529, "overloaded_error"),
    ],
)
async def test_error_responses_have_the_service_body_and_headers(status: int, error_type: str) -> None:
    scripted = {"error": {"status": status, "message": "nope", "retry_after": "7"}}
    async with serve_model_server({"responses": [scripted]}) as server, client_for(server) as client:
        response = await client.post("/v1/messages", json=anthropic_request(), headers=HEADERS)

    assert response.status_code == status
    assert response.headers["request-id"] == "req_fixture_0000"
    assert response.headers["retry-after"] == "7"
    assert response.json() == {
        "type": "error",
        "error": {"type": error_type, "message": "nope"},
        "request_id": "req_fixture_0000",
    }


async def test_stream_error_event_ends_the_stream_after_the_given_chunks() -> None:
    scripted = {
        "steps": [{"text": "abcdef"}],
        "chunk_size": 2,
        "stream_error": {"after_chunks": 2, "type": "overloaded_error", "message": "Overloaded"},
    }
    async with serve_model_server({"responses": [scripted]}) as server, client_for(server) as client:
        response = await client.post("/v1/messages", json=anthropic_request(), headers=HEADERS)
        (record,) = server.requests()

    events = split_sse(response.text)
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "error",
    ]
    assert events[-1][1] == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert record.outcome == "stream_error"


async def test_models_are_listed_in_the_anthropic_shape_when_asked_with_anthropic_version() -> None:
    async with serve_model_server({"models": ["claude-x"]}) as server, client_for(server) as client:
        response = await client.get("/v1/models", headers=HEADERS)

    assert response.json() == {
        "data": [{"type": "model", "id": "claude-x", "display_name": "claude-x", "created_at": "2025-01-01T00:00:00Z"}],
        "has_more": False,
        "first_id": "claude-x",
        "last_id": "claude-x",
    }
