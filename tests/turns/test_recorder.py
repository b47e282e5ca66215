"""The recorder stores before it emits, and a client that stops reading costs a turn one timeout, not one per
update."""

from __future__ import annotations

import anyio
import pytest

from hermes_acp.core import NoticeAdded, SessionEvent, TurnEnded
from hermes_acp.core.notice import Notice
from hermes_acp.storage import InMemorySessionStore, SessionRecord, utc_now
from hermes_acp.turns import LiveTextChunk, LiveUpdate, Recorder, SessionProjection
from hermes_acp.turns import recorder as recorder_module

pytestmark = pytest.mark.anyio


class StuckSink:
    """A client that stops reading: every send waits until ``unstick`` is set."""

    def __init__(self) -> None:
        self.attempts: list[str] = []
        self.unstick = anyio.Event()

    async def emit_event(self, event: SessionEvent, *, live: bool, seq: int | None = None) -> None:
        self.attempts.append(event.kind)
        await self.unstick.wait()

    async def emit_live(self, update: LiveUpdate) -> None:
        self.attempts.append(type(update).__name__)
        await self.unstick.wait()

    async def notice(self, notice: Notice) -> bool:
        return False


async def _recorder(sink: StuckSink) -> tuple[Recorder, InMemorySessionStore]:
    store = InMemorySessionStore()
    now = utc_now()
    await store.create_session(SessionRecord(id="s1", cwd="/", created_at=now, updated_at=now, mode_id="default"))
    return Recorder("s1", store, sink, SessionProjection()), store


async def test_after_one_timed_out_send_the_rest_of_the_turn_is_stored_but_not_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(recorder_module, "EMIT_TIMEOUT_S", 0.05)
    sink = StuckSink()
    recorder, store = await _recorder(sink)
    with anyio.fail_after(5):
        for text in ("one", "two", "three"):
            await recorder.live(LiveTextChunk("m1", text))
        await recorder.record(NoticeAdded(turn_id="t1", message_id="m2", text="stored"))
        await recorder.record(TurnEnded(turn_id="t1", stop_reason="end_turn"))
        sink.unstick.set()
        await recorder.live(LiveTextChunk("m3", "next turn"))
    assert sink.attempts == ["LiveTextChunk", "LiveTextChunk"], "one timed-out send, then the next turn's"
    assert [e.event.kind for e in await store.load_events("s1")] == ["notice_added", "turn_ended"]
