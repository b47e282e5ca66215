"""One model response read within its bounds (``core/bounds.py``), in both wire formats against the scripted server:
a stream that never ends stops at four times the output limit and ends ``max_tokens`` with what arrived (the
connection dropped, nothing retried); an event that never ends stops at its own bound the same way."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_acp.core.bounds import MAX_SSE_EVENT_BYTES, response_char_limit
from hermes_acp.providers.base import ProviderRequest, TextDelta

from .support import FORMATS, WireFormat, collect, done_of, scenario, served, simple_request

pytestmark = pytest.mark.anyio


@FORMATS
async def test_a_stream_that_never_ends_stops_past_four_times_its_output_limit(wire_format: WireFormat) -> None:
    endless = scenario({"endless": True, "steps": [{"text": "never ending "}]})
    async with served(wire_format, endless) as (server, provider):
        request = ProviderRequest(**{**simple_request().model_dump(), "max_output_tokens": 500})
        events = await collect(provider, request)
    done = done_of(events)
    shown = "".join(event.text for event in events if isinstance(event, TextDelta))
    limit = response_char_limit(500)
    assert done.stop_reason == "max_tokens" and done.cut is not None and f"{limit:,} characters" in done.cut
    assert limit < len(shown) < limit + 1000, "what arrived, up to the bound"
    assert done.message.text == shown
    assert len(server.requests()) == 1, "a cut response is not sent again"


@FORMATS
async def test_an_event_without_an_end_stops_at_its_bound(wire_format: WireFormat, tmp_path: Path) -> None:
    body = tmp_path / "body.sse"
    with body.open("wb") as handle:
        handle.write(b"data: " + b"x" * (MAX_SSE_EVENT_BYTES + 1024))
    recorded = scenario({"recorded": {"file": str(body), "chunk_bytes": 65536}})
    async with served(wire_format, recorded) as (server, provider):
        events = await collect(provider)
    done = done_of(events)
    assert done.stop_reason == "max_tokens" and done.cut is not None and "without ending" in done.cut
    assert len(server.requests()) == 1
