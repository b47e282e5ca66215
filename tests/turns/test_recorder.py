"""The recorder stores before it emits; the session's audience bounds each send, so a client that stops reading
costs a turn one timeout, not one per update, and the others go on."""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio
import pytest

from hermes_acp.core import NoticeAdded, SessionEvent, TurnEnded
from hermes_acp.core.notice import Notice
from hermes_acp.sessions.audience import Audience
from hermes_acp.storage import InMemorySessionStore, SessionRecord, utc_now
from hermes_acp.turns import LiveTextChunk, LiveUpdate, Recorder, SessionProjection
from tests.sessions.support import Bridge

pytestmark = pytest.mark.anyio


@dataclass
class Sink:
    """What one client was sent; with ``stuck`` set it stops reading: every send waits until ``unstick`` is set."""

    stuck: bool = False
    attempts: list[str] = field(default_factory=list)
    unstick: anyio.Event = field(default_factory=anyio.Event)

    async def _take(self, what: str) -> None:
        self.attempts.append(what)
        if self.stuck:
            await self.unstick.wait()

    async def emit_event(self, event: SessionEvent, *, live: bool, seq: int | None = None) -> None:
        await self._take(event.kind)

    async def emit_live(self, update: LiveUpdate) -> None:
        assert isinstance(update, LiveTextChunk)
        await self._take(update.text)

    async def notice(self, notice: Notice) -> bool:
        return False


@dataclass
class SinkBridge(Bridge):
    the_sink: Sink = field(default_factory=Sink)

    def sink(self, session_id: str) -> Sink:  # type: ignore[override]
        return self.the_sink


async def test_a_client_that_stops_reading_is_sent_nothing_more_this_turn_and_the_others_get_everything() -> None:
    store = InMemorySessionStore()
    now = utc_now()
    await store.create_session(SessionRecord(id="s1", cwd="/", created_at=now, updated_at=now, mode_id="default"))
    audience = Audience("s1", wait_for_attach=False, send_timeout_s=0.05)
    stuck, reading = SinkBridge(connection_id="stuck", the_sink=Sink(stuck=True)), SinkBridge(connection_id="ok")
    await audience.attach(stuck)
    await audience.attach(reading)
    recorder = Recorder("s1", store, audience, SessionProjection())
    with anyio.fail_after(5):
        for text in ("one", "two", "three"):
            await recorder.live(LiveTextChunk("m1", text))
        await recorder.record(NoticeAdded(turn_id="t1", message_id="m2", text="stored"))
        await recorder.record(TurnEnded(turn_id="t1", stop_reason="end_turn"))
        stuck.the_sink.unstick.set()
        await recorder.live(LiveTextChunk("m3", "next turn"))
    assert stuck.the_sink.attempts == ["one", "next turn"], "one timed-out send, then the next turn's"
    assert reading.the_sink.attempts == ["one", "two", "three", "notice_added", "turn_ended", "next turn"]
    assert [e.event.kind for e in await store.load_events("s1")] == ["notice_added", "turn_ended"]
