"""Asking a service before it is configured: its model list (both wire shapes, a server without the route, hostile
lists through httpx's own mock transport) and a test request that succeeds or fails with the provider's words."""

from __future__ import annotations

import json

import httpx
import pytest

from fixtures.model_server import serve_model_server
from hermes_acp.errors import ProviderAuthError
from hermes_acp.providers.probe import MAX_LISTED, candidate_settings, list_models, try_model
from hermes_acp.providers.registry import build_provider

pytestmark = pytest.mark.anyio


async def test_both_wire_shapes_are_listed_with_the_key_sent() -> None:
    async with serve_model_server({"name": "l", "models": ["a", "b"]}) as server:
        openai = await list_models("openai", server.openai_base_url, "k1")
        anthropic = await list_models("anthropic", server.base_url, "k2")
        records = server.requests()
    assert openai.ids == anthropic.ids == ("a", "b")
    assert [r.path for r in records] == ["/v1/models", "/v1/models"]
    assert records[0].credentials["authorization"].present
    assert records[1].credentials["x-api-key"].present and records[1].headers["anthropic-version"]


async def test_a_server_without_the_route_gives_a_reason() -> None:
    async with serve_model_server({"name": "l", "list_models": False}) as server:
        listing = await list_models("openai", server.openai_base_url, None)
    assert listing.ids == () and listing.problem is not None and "HTTP 404" in listing.problem


async def test_an_unreachable_server_gives_a_reason() -> None:
    async with serve_model_server({"name": "gone"}) as server:
        url = server.openai_base_url
    listing = await list_models("openai", url, None, timeout_s=2)
    assert listing.ids == () and "could not be reached" in (listing.problem or "")


def _serving(body: bytes, status: int = 200) -> httpx.MockTransport:
    return httpx.MockTransport(lambda request: httpx.Response(status, content=body))


@pytest.mark.parametrize(
    ("body", "ids", "problem"),
    [
        (b"<html>", (), "did not answer with JSON"),
        (b"[1, 2]", (), "without a list of models"),
        (
            json.dumps(
                {"data": [{"id": "a\u202eb"}, {"id": "x" * 300}, {"id": 5}, {"id": "ok"}, {"id": "ok"}]}
            ).encode(),
            ("ab", "ok"),
            None,
        ),
        (json.dumps({"models": [{"name": "llama3:8b"}]}).encode(), ("llama3:8b",), None),
        (json.dumps({"data": [{"id": "\x1b[31m"}]}).encode(), (), "listed no models"),
    ],
)
async def test_what_a_server_lists_is_outside_input(body: bytes, ids: tuple[str, ...], problem: str | None) -> None:
    listing = await list_models("openai", "http://h/v1", None, transport=_serving(body))
    assert listing.ids == ids
    assert (problem is None) == (listing.problem is None)
    if problem is not None:
        assert problem in (listing.problem or "")


async def test_a_long_list_is_cut_and_a_huge_answer_refused() -> None:
    many = json.dumps({"data": [{"id": f"m{i}"} for i in range(MAX_LISTED + 50)]}).encode()
    assert len((await list_models("openai", "http://h/v1", None, transport=_serving(many))).ids) == MAX_LISTED
    huge = b'{"data": [' + b'{"id": "m"},' * 500_000 + b'{"id": "n"}]}'
    listing = await list_models("openai", "http://h/v1", None, transport=_serving(huge))
    assert listing.ids == () and "more than" in (listing.problem or "")


async def test_a_test_request_answers_or_raises_the_providers_error() -> None:
    scenario = {"name": "t", "responses": [{"steps": [{"text": "OK"}]}, {"error": {"status": 401}}]}
    async with serve_model_server(scenario) as server:
        settings = candidate_settings("openai", server.openai_base_url, "FX_API_KEY", "m")
        provider = build_provider("fx", settings, "k")
        try:
            done = await try_model(provider, "m")
            with pytest.raises(ProviderAuthError, match="401"):
                await try_model(provider, "m")
        finally:
            await provider.aclose()
        records = server.requests()
    assert done.stop_reason == "end_turn"
    assert len(records) == 2, "no retry: the user is waiting"
    assert records[0].body["max_tokens"] == 16
