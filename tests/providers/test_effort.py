"""Thinking effort on the request side: ``reasoning_effort`` for OpenAI-compatible services, extended thinking with a
budget for Anthropic, nothing for a model that declares no efforts; the system prompt and the tool schemas stay
byte for byte the same whatever the effort. Request bodies as the scripted server received them."""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import Any

import pytest

from hermes_acp.config import Effort
from hermes_acp.core import TextPart, UserMessage
from hermes_acp.providers._anthropic_request import DEFAULT_MAX_TOKENS, THINKING_BUDGETS, build_messages_request
from hermes_acp.providers.base import ProviderRequest, ToolSpec

from .support import FORMATS, WireFormat, collect, scenario, served

pytestmark = pytest.mark.anyio

TOOLS = [
    ToolSpec(name="read_file", description="Read a file.", input_schema={"type": "object", "properties": {}}),
    ToolSpec(name="terminal", description="Run a command.", input_schema={"type": "object"}),
]
EFFORTS: list[Effort] = ["low", "medium", "high"]


def request(effort: Effort | None, model: str = "fixture-model") -> ProviderRequest:
    return ProviderRequest(
        model=model,
        system="You are a careful coding agent.",
        messages=[UserMessage(parts=[TextPart(text="hi")])],
        tools=TOOLS,
        effort=effort,
    )


def prompt_and_schemas(body: dict[str, Any]) -> str:
    """The bytes of the system prompt and the tool schemas as sent."""
    system = body.get("system") if "system" in body else body["messages"][0]
    return json.dumps([system, body["tools"]], sort_keys=False)


async def bodies(wire_format: WireFormat, efforts: list[Effort | None], **options: Any) -> list[dict[str, Any]]:
    replies = scenario(*[{"steps": [{"text": "ok"}]} for _ in efforts])
    async with served(wire_format, replies, **options) as (server, provider):
        for effort in efforts:
            await collect(provider, request(effort))
        records = server.requests()
    return [record.body for record in records if isinstance(record.body, dict)]


@FORMATS
async def test_effort_is_sent_only_for_a_model_that_lists_it_and_never_changes_prompt_or_schemas(
    wire_format: WireFormat,
) -> None:
    models = [{"id": "fixture-model", "efforts": EFFORTS, "default_effort": "medium"}]
    sent = await bodies(wire_format, [None, "low", "medium", "high", "xhigh"], models=models)

    if wire_format == "openai":
        assert [body.get("reasoning_effort") for body in sent] == [None, "low", "medium", "high", None]
    else:
        budgets = [body.get("thinking", {}).get("budget_tokens") for body in sent]
        assert budgets == [None, THINKING_BUDGETS["low"], THINKING_BUDGETS["medium"], THINKING_BUDGETS["high"], None]
    assert len({prompt_and_schemas(body) for body in sent}) == 1


@FORMATS
async def test_a_model_without_efforts_never_gets_the_parameter(wire_format: WireFormat) -> None:
    sent = await bodies(wire_format, ["high", "low"], models=[{"id": "fixture-model"}])

    for body in sent:
        assert "reasoning_effort" not in body
        assert "thinking" not in body
        assert body.get("max_tokens") in (None, DEFAULT_MAX_TOKENS)


def anthropic_limits(effort: Effort | None, limit: int | None) -> tuple[int, Any]:
    body = build_messages_request(request(effort), default_max_tokens=limit)
    return body["max_tokens"], body.get("thinking")


def test_anthropic_budgets_fit_inside_max_tokens() -> None:
    high = THINKING_BUDGETS["high"]
    assert anthropic_limits("high", None) == (high + DEFAULT_MAX_TOKENS, {"type": "enabled", "budget_tokens": high})
    assert anthropic_limits("high", 12_000) == (12_000, {"type": "enabled", "budget_tokens": 12_000 - 1024})
    assert anthropic_limits("minimal", 64_000) == (64_000, {"type": "enabled", "budget_tokens": 1024})
    assert anthropic_limits("medium", 1500) == (1500, None)  # no room for the smallest budget and an answer
    assert anthropic_limits("none", None) == (DEFAULT_MAX_TOKENS, None)
    assert anthropic_limits(None, 4000) == (4000, None)


async def test_a_request_without_an_effort_is_byte_identical_to_what_it_was_before_efforts_existed() -> None:
    async with served("openai", scenario({"steps": [{"text": "ok"}]})) as (server, provider):
        async with aclosing(provider.stream(request(None))) as events:
            async for _ in events:
                pass
        body = server.requests()[0].body

    assert isinstance(body, dict)
    assert set(body) == {"model", "messages", "stream", "stream_options", "tools"}
