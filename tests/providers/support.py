"""Helpers shared by the provider tests: scenarios, a provider served by the scripted model server, collecting
streams, a recording sleep. Not a test module."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any, Literal

import anyio
import anyio.lowlevel
import httpx
import pytest

from fixtures.model_server import ModelServer, serve_model_server
from hermes_acp.config import ProviderSettings
from hermes_acp.core import Message, TextPart, UserMessage
from hermes_acp.providers.anthropic import AnthropicProvider
from hermes_acp.providers.base import ModelProvider, ProviderEvent, ProviderRequest, ResponseDone, ToolSpec
from hermes_acp.providers.openai import OpenAIProvider

WireFormat = Literal["openai", "anthropic"]
API_KEY = "sk-test-0123456789abcdef-SECRET"
KEY_ENV = "FIXTURE_API_KEY"
Provider = OpenAIProvider | AnthropicProvider
FORMATS = pytest.mark.parametrize("wire_format", ["openai", "anthropic"])


def scenario(*responses: dict[str, Any], name: str = "providers") -> dict[str, Any]:
    return {"name": name, "responses": list(responses)}


class RecordingSleep:
    """An injected ``sleep`` that records each delay and returns at once."""

    __test__ = False

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await anyio.lowlevel.checkpoint()


def settings_for(wire_format: WireFormat, base_url: str, **overrides: Any) -> ProviderSettings:
    values: dict[str, Any] = {
        "kind": wire_format,
        "base_url": base_url,
        "api_key_env": KEY_ENV,
        "max_retries": 3,
    }
    values.update(overrides)
    return ProviderSettings(**values)


def base_url_for(wire_format: WireFormat, server: ModelServer) -> str:
    return server.openai_base_url if wire_format == "openai" else server.base_url


def make_provider(
    wire_format: WireFormat,
    base_url: str,
    *,
    api_key: str | None = API_KEY,
    sleep: RecordingSleep | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    **overrides: Any,
) -> Provider:
    settings = settings_for(wire_format, base_url, **overrides)
    cls = OpenAIProvider if wire_format == "openai" else AnthropicProvider
    return cls("fixture", settings, api_key, transport=transport, sleep=sleep or RecordingSleep())


@asynccontextmanager
async def served(
    wire_format: WireFormat, scenario: dict[str, Any], **provider_options: Any
) -> AsyncIterator[tuple[ModelServer, Provider]]:
    """A scripted model server playing ``scenario`` and a provider of ``wire_format`` talking to it, both closed
    at the end of the block whatever happens in it."""
    async with serve_model_server(scenario) as server:
        provider = make_provider(wire_format, base_url_for(wire_format, server), **provider_options)
        async with aclosing(provider):
            yield server, provider


def simple_request(
    text: str = "hello", *, messages: list[Message] | None = None, tools: list[ToolSpec] | None = None
) -> ProviderRequest:
    return ProviderRequest(
        model="fixture-model",
        system="You are a test.",
        messages=messages if messages is not None else [UserMessage(parts=[TextPart(text=text)])],
        tools=tools or [],
    )


async def collect(provider: ModelProvider, request: ProviderRequest | None = None) -> list[ProviderEvent]:
    """Every event of one stream, bounded in time."""
    events: list[ProviderEvent] = []
    with anyio.fail_after(10):
        async with aclosing(provider.stream(request or simple_request())) as stream:
            async for event in stream:
                events.append(event)
    return events


def done_of(events: list[ProviderEvent]) -> ResponseDone:
    """The single final event, checked to be last and unique."""
    finals = [event for event in events if isinstance(event, ResponseDone)]
    assert len(finals) == 1
    assert events[-1] is finals[0]
    return finals[0]
