"""A title written by the title model is stored with what its request cost, and a reload counts that in the
session's spend (as a turn's usage is counted); a title without it (derived, a client's, an older log) counts
nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_acp.core import SessionEvent, TitleSet, Usage
from hermes_acp.storage import SessionRecord, SqliteSessionStore, utc_now
from hermes_acp.turns import SessionProjection

pytestmark = pytest.mark.anyio

SPENT = Usage(input_tokens=420, output_tokens=6)


async def test_a_model_written_title_s_cost_survives_a_reload_and_is_counted(tmp_path: Path) -> None:
    store = await SqliteSessionStore.open(tmp_path / "state.db")
    try:
        now = utc_now()
        await store.create_session(
            SessionRecord(id="s1", cwd=str(tmp_path), created_at=now, updated_at=now, mode_id="default")
        )
        events: list[SessionEvent] = [
            TitleSet(title="Parser fixes", model_id="p:small", usage=SPENT),
            TitleSet(title="Renamed by the user"),
        ]
        await store.append_events("s1", events)
        stored = [s.event for s in await store.load_events("s1")]
    finally:
        await store.aclose()
    assert stored == events
    reloaded = SessionProjection()
    for event in stored:
        reloaded.apply(event)
    assert reloaded.title == "Renamed by the user"
    assert reloaded.usage_by_model == {"p:small": SPENT}


def test_a_title_set_from_an_older_log_reads_without_a_cost() -> None:
    old = TitleSet.model_validate({"kind": "title_set", "title": "Old"})
    assert (old.model_id, old.usage) == (None, None)
    projection = SessionProjection()
    projection.apply(old)
    assert projection.usage_by_model == {}
