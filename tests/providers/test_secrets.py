"""The API key goes only to the provider's own origin and never into a log line, an exception or a repr."""

from __future__ import annotations

import logging
from contextlib import aclosing
from typing import Any

import httpx
import pytest
import structlog.testing

from fixtures.model_server import key_fingerprint, serve_model_server
from hermes_acp.errors import ProviderAuthError, ProviderRequestError
from hermes_acp.providers._http import HostBoundKeyAuth

from .support import (
    API_KEY,
    FORMATS,
    RecordingSleep,
    WireFormat,
    base_url_for,
    collect,
    make_provider,
    scenario,
    served,
)

pytestmark = pytest.mark.anyio
KEY_HEADERS = {"openai": "authorization", "anthropic": "x-api-key"}


@FORMATS
async def test_a_redirect_to_another_host_is_not_followed_and_the_other_host_sees_nothing(
    wire_format: WireFormat,
) -> None:
    async with serve_model_server({"name": "elsewhere", "responses": [{"steps": [{"text": "stolen"}]}]}) as other:
        target = other.base_url + ("/v1/chat/completions" if wire_format == "openai" else "/v1/messages")
        redirect = {"error": {"status": 307, "headers": {"location": target}, "body": ""}}
        async with serve_model_server({"name": "redirector", "responses": [redirect]}) as own:
            async with aclosing(make_provider(wire_format, base_url_for(wire_format, own))) as provider:
                with pytest.raises(ProviderRequestError, match="redirects are not followed") as caught:
                    await collect(provider)
            (own_record,) = own.requests()
        assert other.requests() == []

    assert own_record.credentials[KEY_HEADERS[wire_format]].sha256_prefix == key_fingerprint(API_KEY)
    assert API_KEY not in str(caught.value)


async def test_host_bound_auth_sets_the_header_only_for_its_own_origin() -> None:
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    auth = HostBoundKeyAuth("https://api.example.com/v1", "x-api-key", API_KEY)
    async with httpx.AsyncClient(auth=auth, transport=httpx.MockTransport(record)) as client:
        await client.get("https://api.example.com/v1/models")
        await client.get("https://api.example.com:443/other")
        await client.get("https://evil.example.net/v1/models")
        await client.get("http://api.example.com/v1/models")
        await client.get("https://api.example.com:8443/v1/models")

    assert [request.headers.get("x-api-key") for request in seen] == [API_KEY, API_KEY, None, None, None]
    assert API_KEY not in repr(auth)


@FORMATS
async def test_the_key_never_appears_in_logs_exceptions_or_reprs(
    wire_format: WireFormat, caplog: pytest.LogCaptureFixture
) -> None:
    echo = f"Incorrect API key provided: {API_KEY}"
    responses: list[dict[str, Any]] = [
        {"error": {"status": 429, "message": echo}},
        {"error": {"status": 503, "message": echo}},
        {"error": {"status": 401, "message": echo}},
    ]
    caplog.set_level(logging.DEBUG)
    async with served(wire_format, scenario(*responses), sleep=RecordingSleep()) as (_, provider):
        with structlog.testing.capture_logs() as logs, pytest.raises(ProviderAuthError) as caught:
            await collect(provider)

    retries = [entry for entry in logs if entry["event"] == "provider_retry"]
    assert [entry["status"] for entry in retries] == [429, 503]
    assert all(API_KEY not in repr(entry) for entry in logs)
    assert "[redacted]" in retries[0]["reason"]
    assert API_KEY not in caplog.text
    assert API_KEY not in str(caught.value)
    assert API_KEY not in repr(caught.value)
    assert API_KEY not in repr(provider)
