"""Streamed text is checkpointed into the log while it streams, so a crash keeps what the user saw (up to the last
checkpoint); a complete message supersedes its checkpoints, and a replay renders each text once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from hermes_acp.core import (
    AssistantMessage,
    AssistantMessageStored,
    AssistantTextCheckpointed,
    SessionEvent,
    TextPart,
    ThinkingPart,
    TurnEnded,
    Usage,
    UserMessage,
)
from hermes_acp.errors import StorageError
from hermes_acp.providers.scripted import ScriptedProvider, ScriptedReply, text_reply
from hermes_acp.turns import CheckpointPolicy, SessionProjection, transcript_events
from hermes_acp.turns.recovery import recovery_events

from .support import MODEL, USAGE, open_loop

pytestmark = pytest.mark.anyio

BY_SIZE = CheckpointPolicy(interval_s=3600, max_chars=16)
BY_TIME = CheckpointPolicy(interval_s=0.02, max_chars=1_000_000)
ANSWER = "Forty characters of answer, streamed 8 by 8."


def checkpoints(events: Sequence[object]) -> list[AssistantTextCheckpointed]:
    return [e for e in events if isinstance(e, AssistantTextCheckpointed)]


async def test_text_is_checkpointed_every_max_chars_and_the_complete_message_supersedes_it(tmp_path: Path) -> None:
    provider = ScriptedProvider([ScriptedReply(parts=[ThinkingPart(text="Thinking it over."), TextPart(text=ANSWER)])])
    loop = await open_loop(tmp_path, provider, checkpoints=BY_SIZE)
    await loop.turn("go")
    stored = await loop.stored()
    saved = checkpoints(stored)
    assert len(saved) >= 3
    assert all(len(c.text) + len(c.thinking) >= BY_SIZE.max_chars for c in saved), "none before max_chars piled up"
    assert {(c.turn_id, c.message_id, c.model_id) for c in saved} == {("t1", "m2", MODEL.id)}
    assert ANSWER.startswith("".join(c.text for c in saved))
    assert "Thinking it over.".startswith("".join(c.thinking for c in saved))
    complete = AssistantMessageStored(
        turn_id="t1",
        message_id="m2",
        message=AssistantMessage(parts=[ThinkingPart(text="Thinking it over."), TextPart(text=ANSWER)]),
        model_id=MODEL.id,
        usage=USAGE,
        context_window=MODEL.context_window,
    )
    assert stored[-2:] == [complete, TurnEnded(turn_id="t1", stop_reason="end_turn", usage=USAGE)]
    assert [e for e in loop.shown() if isinstance(e, AssistantTextCheckpointed)] == saved, "emitted like any event"
    assert checkpoints(transcript_events(stored)) == [], "a replay renders the complete message only"
    assert loop.recorder.projection.open_texts == {}


async def test_text_waiting_in_a_stalled_stream_is_checkpointed_after_the_interval(tmp_path: Path) -> None:
    hold = anyio.Event()
    provider = ScriptedProvider([ScriptedReply(parts=[TextPart(text=ANSWER)], hold=hold)])
    loop = await open_loop(tmp_path, provider, checkpoints=BY_TIME)
    async with anyio.create_task_group() as group:
        group.start_soon(loop.turn, "go")
        with anyio.fail_after(10):
            while not checkpoints(await loop.stored()):
                await loop.store.wrote.wait()
        log = [stored.event for stored in await loop.store.load_events("s1")]
        crash = SessionProjection()  # what a server killed now leaves in the log
        for event in log:
            crash.apply(event)
        hold.set()
    repaired = recovery_events(crash)
    assert repaired[0] == AssistantMessageStored(
        turn_id="t1",
        message_id=checkpoints(log)[0].message_id,
        message=AssistantMessage(parts=[TextPart(text=ANSWER[:8])]),
        model_id=MODEL.id,
        interrupted=True,
    ), "after a crash: the text shown before the stream stalled, as an interrupted message"
    assert repaired[1:] == [TurnEnded(turn_id="t1", stop_reason="cancelled")]
    for event in repaired:
        crash.apply(event)
    assert crash.history == [
        UserMessage(parts=[TextPart(text="go")]),
        AssistantMessage(parts=[TextPart(text=ANSWER[:8])]),
    ]
    assert crash.open_texts == {}


async def test_a_checkpoint_that_cannot_be_stored_stops_the_stream_and_the_repair_keeps_the_rest(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider([ScriptedReply(parts=[TextPart(text=ANSWER)]), text_reply("Next.")])
    loop = await open_loop(tmp_path, provider, checkpoints=BY_SIZE)
    written: list[int] = []

    def second_checkpoint(events: Sequence[SessionEvent]) -> bool:
        if checkpoints(events):
            written.append(1)
        return len(written) == 2

    loop.store.refuse_once(second_checkpoint)
    with pytest.raises(StorageError):
        await loop.turn("go")
    first = checkpoints(await loop.stored())
    assert len(first) == 1
    assert len(loop.sink.text) < len(ANSWER), "the stream stopped when the store failed"
    await loop.turn("again")
    stored = await loop.stored()
    assert stored[2:4] == [
        AssistantMessageStored(
            turn_id="t1",
            message_id="m2",
            message=AssistantMessage(parts=[TextPart(text=first[0].text)]),
            model_id=MODEL.id,
            interrupted=True,
        ),
        TurnEnded(turn_id="t1", stop_reason="cancelled", usage=Usage()),
    ]
    assert provider.requests[1].messages[:2] == [
        UserMessage(parts=[TextPart(text="go")]),
        AssistantMessage(parts=[TextPart(text=first[0].text)]),
    ]


def test_a_replay_keeps_the_checkpoints_of_a_message_still_streaming() -> None:
    still = AssistantTextCheckpointed(turn_id="t1", message_id="a", model_id="m", text="so far")
    done = AssistantTextCheckpointed(turn_id="t1", message_id="b", model_id="m", text="old")
    complete = AssistantMessageStored(
        turn_id="t1", message_id="b", message=AssistantMessage(parts=[TextPart(text="old and new")]), model_id="m"
    )
    assert transcript_events([done, complete, still]) == [complete, still]


def test_a_checkpoint_renders_nothing_live_and_its_text_on_replay() -> None:
    from hermes_acp.protocol.convert import event_updates

    checkpoint = AssistantTextCheckpointed(turn_id="t1", message_id="a", model_id="m", text="so far", thinking="hm")
    assert event_updates(checkpoint, live=True) == []
    assert event_updates(checkpoint, live=False) == [
        {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}, "messageId": "a"},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "so far"}, "messageId": "a"},
    ]
