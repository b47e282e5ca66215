"""Retries, error mapping and timeouts of both HTTP providers (delays recorded by an injected sleep)."""

from __future__ import annotations

import socket
from contextlib import AsyncExitStack, aclosing
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import anyio
import httpx
import pytest

from fixtures.model_server import serve_model_server
from hermes_acp.errors import (
    ProviderAuthError,
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderStreamError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)
from hermes_acp.providers._retry import RETRY_AFTER_CAP_S
from hermes_acp.providers.base import ProviderEvent, TextDelta

from .support import (
    API_KEY,
    FORMATS,
    KEY_ENV,
    RecordingSleep,
    WireFormat,
    collect,
    done_of,
    make_provider,
    scenario,
    served,
    simple_request,
)

pytestmark = pytest.mark.anyio
OK = {"steps": [{"text": "recovered"}]}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@FORMATS
async def test_429_with_retry_after_seconds_is_retried_after_exactly_that_delay(wire_format: WireFormat) -> None:
    limited = {"error": {"status": 429, "message": "slow down", "retry_after": "2"}}
    sleep = RecordingSleep()
    async with served(wire_format, scenario(limited, OK), sleep=sleep) as (server, provider):
        events = await collect(provider)
        records = server.requests()

    assert sleep.delays == [2.0]
    assert [r.status for r in records] == [429, 200]
    assert done_of(events).message.text == "recovered"


@FORMATS
async def test_retry_after_as_an_http_date_is_honoured_and_capped(wire_format: WireFormat) -> None:
    far = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
    limited = {"error": {"status": 429, "retry_after": far}}
    sleep = RecordingSleep()
    async with served(wire_format, scenario(limited, OK), sleep=sleep) as (_, provider):
        await collect(provider)

    assert sleep.delays == [RETRY_AFTER_CAP_S]


@FORMATS
@pytest.mark.parametrize("status", [500, 503, 529])
async def test_server_errors_are_retried_with_growing_jittered_backoff(wire_format: WireFormat, status: int) -> None:
    failing = {"error": {"status": status, "message": "upstream trouble"}}
    sleep = RecordingSleep()
    async with served(wire_format, scenario(failing, failing, OK), sleep=sleep) as (_, provider):
        events = await collect(provider)

    assert len(sleep.delays) == 2
    assert 0.25 <= sleep.delays[0] <= 0.5
    assert 0.5 <= sleep.delays[1] <= 1.0
    assert done_of(events).message.text == "recovered"


@FORMATS
async def test_rate_limit_after_every_retry_raises_with_the_provider_message(wire_format: WireFormat) -> None:
    limited = {"error": {"status": 429, "message": "quota exceeded for model"}, "repeat": True}
    sleep = RecordingSleep()
    async with served(wire_format, scenario(limited), sleep=sleep, max_retries=2) as (server, provider):
        with pytest.raises(ProviderRateLimitError, match="quota exceeded for model") as caught:
            await collect(provider)
        records = server.requests()

    assert caught.value.status == 429
    assert caught.value.provider == "fixture"
    assert len(records) == 3
    assert len(sleep.delays) == 2


@FORMATS
async def test_server_error_after_every_retry_raises_unavailable(wire_format: WireFormat) -> None:
    failing = {"error": {"status": 502, "message": "bad gateway"}, "repeat": True}
    async with served(wire_format, scenario(failing), max_retries=1) as (server, provider):
        with pytest.raises(ProviderUnavailableError, match="502"):
            await collect(provider)
        assert len(server.requests()) == 2


@FORMATS
async def test_connection_refused_is_retried_until_the_server_is_up(wire_format: WireFormat) -> None:
    port = free_port()
    async with AsyncExitStack() as stack:
        started: list[int] = []

        class StartServerOnFirstSleep(RecordingSleep):
            async def __call__(self, delay: float) -> None:
                await super().__call__(delay)
                if not started:
                    await stack.enter_async_context(serve_model_server(scenario(OK), port=port))
                    started.append(port)

        sleep = StartServerOnFirstSleep()
        base_url = f"http://127.0.0.1:{port}" + ("/v1" if wire_format == "openai" else "")
        async with aclosing(make_provider(wire_format, base_url, sleep=sleep)) as provider:
            events = await collect(provider)

    assert len(sleep.delays) == 1
    assert done_of(events).message.text == "recovered"


@FORMATS
async def test_connection_refused_after_every_retry_raises_unavailable(wire_format: WireFormat) -> None:
    sleep = RecordingSleep()
    async with aclosing(
        make_provider(wire_format, f"http://127.0.0.1:{free_port()}", sleep=sleep, max_retries=2)
    ) as provider:
        with pytest.raises(ProviderUnavailableError, match="cannot connect"):
            await collect(provider)

    assert len(sleep.delays) == 2


@FORMATS
async def test_a_stream_cut_after_output_started_raises_stream_error_without_retrying(
    wire_format: WireFormat,
) -> None:
    cut = {"steps": [{"text": "partial answer that never ends"}], "chunk_size": 4, "cut_after_chunks": 2}
    sleep = RecordingSleep()
    received: list[ProviderEvent] = []
    async with served(wire_format, scenario(cut, OK), sleep=sleep) as (server, provider):

        async def consume() -> None:
            async with aclosing(provider.stream(simple_request())) as stream:
                async for event in stream:
                    received.append(event)

        with anyio.fail_after(10), pytest.raises(ProviderStreamError, match="broke off after output started") as caught:
            await consume()
        records = server.requests()

    assert [e.text for e in received if isinstance(e, TextDelta)] == ["part", "ial "]
    assert str(caught.value).startswith("fixture: the stream broke off after output started: the connection")
    assert len(records) == 1
    assert records[0].outcome == "cut"
    assert sleep.delays == []


@FORMATS
async def test_a_stream_cut_before_any_output_is_retried(wire_format: WireFormat) -> None:
    cut = {"steps": [{"text": "lost"}], "cut_after_chunks": 0}
    sleep = RecordingSleep()
    async with served(wire_format, scenario(cut, OK), sleep=sleep) as (server, provider):
        events = await collect(provider)
        records = server.requests()

    assert [r.outcome for r in records] == ["cut", "completed"]
    assert len(sleep.delays) == 1
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["recovered"]


@FORMATS
async def test_an_overloaded_error_event_before_output_is_retried(wire_format: WireFormat) -> None:
    overloaded = {"steps": [{"text": "never"}], "stream_error": {"after_chunks": 0, "type": "overloaded_error"}}
    sleep = RecordingSleep()
    async with served(wire_format, scenario(overloaded, OK), sleep=sleep) as (_, provider):
        events = await collect(provider)

    assert len(sleep.delays) == 1
    assert done_of(events).message.text == "recovered"


@FORMATS
async def test_an_error_event_after_output_raises_stream_error(wire_format: WireFormat) -> None:
    overloaded = {
        "steps": [{"text": "some text"}],
        "chunk_size": 4,
        "stream_error": {"after_chunks": 1, "type": "overloaded_error", "message": "Overloaded"},
    }
    async with served(wire_format, scenario(overloaded, OK)) as (server, provider):
        with pytest.raises(ProviderStreamError, match="Overloaded"):
            await collect(provider)
        assert len(server.requests()) == 1


@FORMATS
@pytest.mark.parametrize("status", [401, 403])
async def test_rejected_credentials_raise_auth_error_naming_the_env_var_and_hiding_the_key(
    wire_format: WireFormat, status: int
) -> None:
    rejected = {"error": {"status": status, "message": f"Incorrect API key provided: {API_KEY}"}}
    sleep = RecordingSleep()
    async with served(wire_format, scenario(rejected, OK), sleep=sleep) as (server, provider):
        with pytest.raises(ProviderAuthError) as caught:
            await collect(provider)
        assert len(server.requests()) == 1

    message = str(caught.value)
    assert KEY_ENV in message
    assert "fixture" in message
    assert API_KEY not in message
    assert "[redacted]" in message
    assert caught.value.status == status
    assert sleep.delays == []


async def test_auth_error_without_api_key_env_says_how_to_configure_one() -> None:
    rejected = {"error": {"status": 401, "message": "Missing Authentication header"}}
    async with served("openai", scenario(rejected), api_key=None, api_key_env=None) as (_, provider):
        with pytest.raises(ProviderAuthError, match=r"Set api_key_env for \[providers.fixture\]"):
            await collect(provider)


@FORMATS
async def test_bad_request_carries_the_provider_message_and_is_not_retried(wire_format: WireFormat) -> None:
    bad = {"error": {"status": 400, "message": "messages.1.content: tool_use ids must be unique"}}
    async with served(wire_format, scenario(bad, OK)) as (server, provider):
        with pytest.raises(ProviderRequestError, match="tool_use ids must be unique") as caught:
            await collect(provider)
        assert len(server.requests()) == 1

    assert caught.value.status == 400


async def test_not_found_suggests_checking_base_url_and_model() -> None:
    missing = {"error": {"status": 404, "body": {"error": "model 'qwen9' not found"}}}
    async with served("openai", scenario(missing)) as (_, provider):
        with pytest.raises(ProviderRequestError, match=r"model 'qwen9' not found.*Check base_url"):
            await collect(provider)


async def test_an_exhausted_scenario_surfaces_as_a_request_error_naming_it() -> None:
    async with served("openai", scenario(name="failures")) as (_, provider):
        with pytest.raises(ProviderRequestError, match="scenario 'failures' is exhausted"):
            await collect(provider)


@FORMATS
async def test_read_timeout_raises_timeout_error_without_retry(wire_format: WireFormat) -> None:
    def time_out(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    sleep = RecordingSleep()
    transport = httpx.MockTransport(time_out)
    async with aclosing(
        make_provider(wire_format, "http://model.test", sleep=sleep, transport=transport, timeout_s=5)
    ) as provider:
        with pytest.raises(ProviderTimeoutError, match="within the timeout"):
            await collect(provider)

    assert sleep.delays == []


async def test_connect_timeout_is_retried_then_raised_as_timeout() -> None:
    calls: list[httpx.Request] = []

    def time_out(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ConnectTimeout("connect timed out", request=request)

    async with aclosing(
        make_provider("openai", "http://model.test", transport=httpx.MockTransport(time_out), max_retries=1)
    ) as provider:
        with pytest.raises(ProviderTimeoutError, match="connect timeout"):
            await collect(provider)

    assert len(calls) == 2


async def test_the_timeouts_come_from_the_settings() -> None:
    seen: list[dict[str, float | None]] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions["timeout"])
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=b"data: [DONE]\n\n")

    transport = httpx.MockTransport(record)
    async with aclosing(
        make_provider("openai", "http://m.test", transport=transport, timeout_s=42.0, connect_timeout_s=3.0)
    ) as provider:
        await collect(provider)

    assert seen == [{"connect": 3.0, "read": 42.0, "write": 42.0, "pool": 42.0}]


async def test_a_json_answer_to_a_stream_request_is_a_stream_error() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"choices": []})

    async with aclosing(make_provider("openai", "http://m.test", transport=httpx.MockTransport(answer))) as provider:
        with pytest.raises(ProviderStreamError, match="expected an event stream"):
            await collect(provider)
