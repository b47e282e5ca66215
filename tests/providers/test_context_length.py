"""A prompt too long for the model's context is a ``ContextLengthError``, in the words of every service: OpenAI,
Anthropic, Ollama, vLLM, LM Studio, llama.cpp and OpenRouter (error bodies as the model fixture sends them, after
the services), whether it comes as an HTTP error or inside a stream. It is never retried."""

from __future__ import annotations

from contextlib import aclosing

import pytest

from fixtures.model_server import estimate_tokens
from hermes_acp.errors import ContextLengthError, ProviderRequestError
from hermes_acp.providers.base import ProviderRequest

from .support import RecordingSleep, WireFormat, collect, scenario, served, simple_request
from .test_stream_quirks import provider_for, sse_body

pytestmark = pytest.mark.anyio

SERVICE_WORDS = {
    "openai": "maximum context length is 50 tokens",
    "anthropic": "prompt is too long",
    "ollama": "the input length exceeds the context length",
    "vllm": "This model's maximum context length is 50 tokens. However, you requested",
    "lmstudio": "Trying to keep the first",
    "openrouter": "This endpoint's maximum context length is 50 tokens",
    "llamacpp": "exceeds the available context size (50 tokens)",
}


@pytest.mark.parametrize("flavour", list(SERVICE_WORDS))
async def test_each_service_refusal_of_a_long_prompt_is_a_context_length_error(flavour: str) -> None:
    wire_format: WireFormat = "anthropic" if flavour == "anthropic" else "openai"
    replies = {**scenario({"steps": [{"text": "never"}]}), "context_limit": {"tokens": 50, "flavour": flavour}}
    sleep = RecordingSleep()
    async with served(wire_format, replies, sleep=sleep) as (server, provider):
        with pytest.raises(ContextLengthError) as caught:
            await collect(provider, simple_request("x" * 400))
        record = server.requests()[0]

    assert caught.value.status == 400
    assert SERVICE_WORDS[flavour] in str(caught.value)
    assert "does not fit the model's context window" in str(caught.value)
    assert sleep.delays == []
    assert record.outcome == "context_exceeded"


async def test_a_prompt_within_the_limit_is_answered_and_the_estimate_is_bytes_over_four() -> None:
    replies = {**scenario({"steps": [{"text": "fits"}]}), "context_limit": {"tokens": 10_000}}
    async with served("openai", replies) as (server, provider):
        await collect(provider, simple_request("short"))
        record = server.requests()[0]

    assert record.outcome == "completed"
    assert estimate_tokens(b"12345678") == 2
    assert estimate_tokens(b"123456789") == 3


async def test_another_bad_request_stays_a_plain_request_error() -> None:
    replies = scenario({"error": {"status": 400, "message": "model 'x' does not support tools"}})
    async with served("openai", replies) as (_, provider):
        with pytest.raises(ProviderRequestError) as caught:
            await collect(provider, ProviderRequest(model="x", system="", messages=simple_request().messages))

    assert type(caught.value) is ProviderRequestError


async def test_a_context_error_inside_a_stream_is_recognised_too() -> None:
    message = (
        "This endpoint's maximum context length is 8192 tokens. However, you requested about 9000 tokens "
        "(9000 of text input, 0 in the output)."
    )
    body = sse_body({"error": {"message": message, "code": 400}})
    async with aclosing(provider_for("openai", body)) as provider:
        with pytest.raises(ContextLengthError, match="maximum context length is 8192"):
            await collect(provider)
