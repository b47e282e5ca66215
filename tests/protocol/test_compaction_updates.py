"""How compactions and the context meter reach an editor: ``compaction_update`` / ``compaction_summary_chunk`` only
for a client that advertised ``session.compaction``, a short agent message for any other, and ``usage_update`` with
the session's cost. Every update is checked against the official ACP schema."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_acp.core import ContextCompacted, Usage
from hermes_acp.protocol.convert import compaction_note, event_updates, live_update
from hermes_acp.providers.catalog import Cost
from hermes_acp.turns.ports import LiveCompaction, LiveCompactionChunk, LiveUpdate, LiveUsage
from tests.fakes.acp_schema import SCHEMA_DIR, schema_problems
from tests.fakes.lanes import lane_missing

SUMMARIZED = ContextCompacted(
    turn_id="t1",
    compaction_id="compaction_1",
    message_id="m1",
    trigger="threshold",
    method="summary",
    replaced=12,
    summary="Goal: ship it.",
    model_id="fx:m",
    usage=Usage(input_tokens=900, output_tokens=60),
    tokens_before=13_000,
    tokens_after=3_200,
)
DROPPED = SUMMARIZED.model_copy(
    update={
        "method": "dropped",
        "summary": "",
        "error": "HTTP 500: down",
        "stubs": {"c1": "[cut]"},
        "trigger": "overflow",
    }
)


def valid(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``updates``, once each has passed the ACP schema as a ``session/update`` notification."""
    if not (SCHEMA_DIR / "schema.json").is_file():
        lane_missing("the ACP schema is not installed: run `bash .ci/acp-schema-setup.sh`")
    frames = [
        ("to_client", {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": u}})
        for u in updates
    ]
    assert schema_problems(frames, pending={}) == []  # type: ignore[arg-type]
    return updates


@pytest.mark.parametrize("live", [True, False])
def test_a_client_with_the_capability_gets_a_completed_compaction_with_its_summary(live: bool) -> None:
    assert valid(event_updates(SUMMARIZED, live=live, compaction=True)) == [
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "compaction_1",
            "status": "completed",
            "summary": [{"type": "text", "text": "Goal: ship it.\n\n" + compaction_note(SUMMARIZED)}],
        }
    ]


@pytest.mark.parametrize("live", [True, False])
def test_a_client_without_it_gets_a_short_agent_message_live_and_on_replay(live: bool) -> None:
    (update,) = valid(event_updates(SUMMARIZED, live=live))
    assert update == {
        "sessionUpdate": "agent_message_chunk",
        "content": {
            "type": "text",
            "text": "Compacted the conversation (it neared the context window): 13,000 → 3,200 tokens; the 12"
            " earliest messages were summarised by fx:m. The full history stays in this session's transcript.",
        },
        "messageId": "m1",
    }
    (dropped,) = event_updates(DROPPED, live=live)
    assert dropped["content"]["text"] == (
        "Compacted the conversation (the model refused it as too long for its context window): 13,000 → 3,200"
        " tokens; summarising the 12 earliest messages failed (HTTP 500: down), so they were dropped: the model no"
        " longer sees them; 1 large tool result was cut to a short stub. The full history stays in this session's"
        " transcript."
    )


def test_a_running_compaction_and_its_summary_chunks_only_reach_a_client_that_renders_them() -> None:
    running: list[LiveUpdate] = [
        LiveCompaction("compaction_1", "in_progress"),
        LiveCompactionChunk("compaction_1", "Goal: "),
        LiveCompaction("compaction_1", "cancelled"),
        LiveCompaction("compaction_1", "failed", error="the store failed"),
    ]
    assert [live_update(u) for u in running] == [None] * 4
    assert valid([u for u in (live_update(r, compaction=True) for r in running) if u is not None]) == [
        {"sessionUpdate": "compaction_update", "compactionId": "compaction_1", "status": "in_progress"},
        {
            "sessionUpdate": "compaction_summary_chunk",
            "compactionId": "compaction_1",
            "content": {"type": "text", "text": "Goal: "},
        },
        {"sessionUpdate": "compaction_update", "compactionId": "compaction_1", "status": "cancelled"},
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "compaction_1",
            "status": "failed",
            "error": "the store failed",
        },
    ]


def test_the_meter_carries_the_cost_when_there_is_one() -> None:
    assert valid(
        [
            live_update(LiveUsage(used=3_200, size=16_000)),  # type: ignore[list-item]
            live_update(LiveUsage(used=3_200, size=16_000, cost=Cost(amount=0.0123))),  # type: ignore[list-item]
        ]
    ) == [
        {"sessionUpdate": "usage_update", "used": 3_200, "size": 16_000},
        {"sessionUpdate": "usage_update", "used": 3_200, "size": 16_000, "cost": {"amount": 0.0123, "currency": "USD"}},
    ]
