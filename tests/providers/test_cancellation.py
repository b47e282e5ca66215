"""Stopping a stream early closes the HTTP response: the server sees the client go away."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

import anyio
import pytest

from hermes_acp.providers.base import ProviderEvent, TextDelta

from .support import FORMATS, WireFormat, collect, done_of, served, simple_request

pytestmark = pytest.mark.anyio
HELD: dict[str, Any] = {"steps": [{"text": "first chunk, then silence"}], "chunk_size": 6, "hold_after_chunks": 1}
AFTER = {"steps": [{"text": "next turn"}]}


@FORMATS
async def test_closing_the_stream_after_the_first_delta_disconnects(wire_format: WireFormat) -> None:
    async with served(wire_format, {"name": "hold", "responses": [HELD, AFTER]}) as (server, provider):
        received: list[ProviderEvent] = []
        with anyio.fail_after(5):
            async with aclosing(provider.stream(simple_request())) as stream:
                async for event in stream:
                    received.append(event)
                    break
            record = await server.wait_finished(0)
        next_events = await collect(provider)

    assert received == [TextDelta(text="first ")]
    assert record.outcome == "client_disconnected"
    assert done_of(next_events).message.text == "next turn"


@FORMATS
async def test_cancelling_the_consuming_task_disconnects(wire_format: WireFormat) -> None:
    async with served(wire_format, {"name": "hold", "responses": [HELD]}) as (server, provider):
        first_delta = anyio.Event()
        received: list[ProviderEvent] = []

        async def consume() -> None:
            async with aclosing(provider.stream(simple_request())) as stream:
                async for event in stream:
                    received.append(event)
                    first_delta.set()

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(consume)
                await first_delta.wait()
                tg.cancel_scope.cancel()
            record = await server.wait_finished(0)

    assert received == [TextDelta(text="first ")]
    assert record.outcome == "client_disconnected"
