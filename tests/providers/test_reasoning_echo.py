"""Reasoning sent back behind any host: the recorded DeepSeek thinking-mode stream served from a loopback host (a
LiteLLM or one-api proxy stands there in real life) gets its ``reasoning_content`` back; a strict server that
refuses the field gets the request once more without it, and a server that demands it once more with it; what a
session learned holds for its later requests and for no other session. Through the real OpenAI-compatible
provider and the scripted model server, request bodies asserted."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

import pytest

from fixtures.model_server import ModelServer, serve_model_server
from hermes_acp.config import SendBackField
from hermes_acp.core import Message, TextPart, ToolResultMessage, UserMessage
from hermes_acp.errors import ProviderRequestError
from hermes_acp.providers.base import EchoRules, ModelProvider, ProviderRequest
from hermes_acp.providers.echo import EchoMemory, adjusted

from .corpus_cases import CASES, recorded_reasoning_content
from .support import collect, done_of, make_provider

pytestmark = pytest.mark.anyio

CASE = next(case for case in CASES if case.id == "deepseek-reasoner-tool-call")
RECORDING = CASE.recordings[0]
REASONING = recorded_reasoning_content(RECORDING)
DEEPSEEK_DEMAND = "The reasoning_content in the thinking mode must be passed back to the API. (invalid_request_error)"


def served_deepseek(**refusals: Any) -> dict[str, Any]:
    """The recorded tool call, then plain answers, from a server with ``refusals`` (``requires_sent_back`` /
    ``refuses_sent_back``)."""
    recorded = {"file": str(RECORDING.file), "chunk_bytes": 3}
    return {
        "name": "deepseek-behind-a-proxy",
        "models": [CASE.id],
        "responses": [{"recorded": recorded}, {"repeat": True, "steps": [{"text": "Sunny."}]}],
        **refusals,
    }


def request(messages: list[Message]) -> ProviderRequest:
    return ProviderRequest(model=CASE.id, system="s", messages=messages)


async def tool_turn(provider: ModelProvider) -> list[Message]:
    """The recorded answer, and the history a follow-up sends: the call answered by a tool result."""
    history: list[Message] = [UserMessage(parts=[TextPart(text="Weather in SF?")])]
    message = done_of(await collect(provider, request(history))).message
    assert message.tool_calls, "the recording calls a tool"
    call = message.tool_calls[0]
    return [*history, message, ToolResultMessage(tool_call_id=call.id, name=call.name, parts=[TextPart(text="sun")])]


def assistant_sent(server: ModelServer, index: int) -> dict[str, Any]:
    body = server.requests()[index].body
    assert isinstance(body, dict)
    return next(m for m in body["messages"] if m["role"] == "assistant")


async def test_the_deepseek_stream_from_another_host_gets_its_reasoning_back_without_any_setting() -> None:
    async with serve_model_server(served_deepseek(requires_sent_back=["reasoning_content"])) as server:
        assert "deepseek" not in server.openai_base_url
        async with aclosing(make_provider("openai", server.openai_base_url, max_retries=0)) as provider:
            history = await tool_turn(provider)
            done = done_of(await collect(provider, request(history)))

    assert done.message.text == "Sunny."
    assert done.echo_rules is None, "nothing had to be learned"
    assert len(server.requests()) == 2
    assert assistant_sent(server, 1)["reasoning_content"] == REASONING


async def test_a_strict_server_that_refuses_the_field_gets_the_request_once_more_without_it_for_the_session() -> None:
    async with serve_model_server(served_deepseek(refuses_sent_back=["reasoning_content"])) as server:
        async with aclosing(make_provider("openai", server.openai_base_url, max_retries=0)) as shared:
            session, other = EchoMemory().provider(shared), EchoMemory().provider(shared)
            history = await tool_turn(session)
            first = done_of(await collect(session, request(history)))
            later = done_of(await collect(session, request([*history, first.message, _user("And tomorrow?")])))
            elsewhere = done_of(await collect(other, request(history)))
    outcomes = [record.outcome for record in server.requests()]

    assert first.message.text == later.message.text == elsewhere.message.text == "Sunny."
    assert first.echo_rules == EchoRules(omit=frozenset({"reasoning_content"}))
    assert later.echo_rules is None, "the session sent it without the field from the start"
    assert outcomes == ["completed", "unknown_field", "completed", "completed", "unknown_field", "completed"]
    assert "reasoning_content" in assistant_sent(server, 1)
    assert "reasoning_content" not in assistant_sent(server, 2)
    assert "reasoning_content" not in assistant_sent(server, 3)
    assert "reasoning_content" in assistant_sent(server, 4), "another session learns for itself"


async def test_a_server_that_demands_the_field_gets_the_request_once_more_with_it() -> None:
    async with serve_model_server(served_deepseek(requires_sent_back=["reasoning_content"])) as server:
        async with aclosing(make_provider("openai", server.openai_base_url, max_retries=0, send_back=[])) as shared:
            session = EchoMemory().provider(shared)
            history = await tool_turn(session)
            first = done_of(await collect(session, request(history)))
            later = done_of(await collect(session, request([*history, first.message, _user("And tomorrow?")])))
    outcomes = [record.outcome for record in server.requests()]

    assert first.message.text == later.message.text == "Sunny."
    assert first.echo_rules == EchoRules(force=frozenset({"reasoning_content"}))
    assert outcomes == ["completed", "missing_sent_back", "completed", "completed"]
    assert "reasoning_content" not in assistant_sent(server, 1), "send_back = [] sends nothing at first"
    assert assistant_sent(server, 2)["reasoning_content"] == REASONING
    assert assistant_sent(server, 3)["reasoning_content"] == REASONING


async def test_a_server_that_refuses_the_changed_request_too_is_not_asked_a_third_time() -> None:
    scenario = served_deepseek(refuses_sent_back=["reasoning_content"], requires_sent_back=["reasoning_content"])
    async with serve_model_server(scenario) as server:
        async with aclosing(make_provider("openai", server.openai_base_url, max_retries=0)) as provider:
            history = await tool_turn(provider)
            with pytest.raises(ProviderRequestError, match="must be passed back"):
                await collect(provider, request(history))

    assert [record.outcome for record in server.requests()] == ["completed", "unknown_field", "missing_sent_back"]


def test_only_a_400_about_a_field_we_can_change_changes_the_request() -> None:
    none = EchoRules()
    carried: frozenset[SendBackField] = frozenset({"reasoning_content"})
    openai = "Additional properties are not allowed ('reasoning_content' was unexpected) - 'messages.2'"
    groq = "'messages.2' : for 'role:assistant' the following must be satisfied[property 'reasoning_content' is unsupported]"  # noqa: E501
    missing = "Missing `reasoning_content` field in the assistant message at message index 2"
    gemini = "Function call is missing a thought_signature in functionCall parts."

    assert adjusted(none, openai, carried) == EchoRules(omit=carried)
    assert adjusted(none, groq, carried) == EchoRules(omit=carried)
    assert adjusted(none, openai, frozenset()) is None, "a field the request did not carry cannot be left out"
    assert adjusted(EchoRules(omit=carried), openai, carried) is None
    assert adjusted(none, DEEPSEEK_DEMAND, frozenset()) == EchoRules(force=carried)
    assert adjusted(none, missing, frozenset()) == EchoRules(force=carried)
    assert adjusted(EchoRules(omit=carried), missing, frozenset()) == EchoRules(force=carried)
    assert adjusted(EchoRules(force=carried), DEEPSEEK_DEMAND, carried) is None
    assert adjusted(none, gemini, frozenset()) == EchoRules(force=frozenset({"extra_content"}))
    assert adjusted(none, "This model's maximum context length is 8192 tokens.", carried) is None
    assert adjusted(none, "Invalid value for 'model'", carried) is None


def _user(text: str) -> UserMessage:
    return UserMessage(parts=[TextPart(text=text)])
