"""Loading a session a killed server left mid-turn: the repair is stored, replayed and folded into the history.
Checkpointed text becomes an interrupted message; a call the log shows running is "outcome unknown", one it shows
never started is "not run"."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from hermes_acp.core import (
    AssistantMessage,
    AssistantMessageStored,
    AssistantTextCheckpointed,
    SessionEvent,
    TextBlock,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolCallRunning,
    ToolCallSettled,
    ToolCallStarted,
    ToolResultMessage,
    TurnEnded,
    UserMessage,
    UserPrompted,
)
from hermes_acp.providers.scripted import ScriptedProvider
from hermes_acp.sessions.session import Session
from hermes_acp.turns.recovery import OUTCOME_UNKNOWN_TEXT
from hermes_acp.turns.settlements import NOT_RUN

from .support import Bridge, client_of, open_manager

pytestmark = pytest.mark.anyio

PROMPT = UserPrompted(
    turn_id="t1", message_id="u1", display=[TextBlock(text="go")], message=UserMessage(parts=[TextPart(text="go")])
)


async def _load_after_crash(tmp_path: Path, left: list[SessionEvent]) -> tuple[list[SessionEvent], Bridge, Session]:
    """Store ``left`` as a killed server would have, load the session with replay; (stored log, bridge, session)."""
    bridge = Bridge()
    with anyio.fail_after(10):
        async with open_manager(tmp_path, ScriptedProvider([]), bridge=bridge) as manager:
            session = await manager.new_session(str(tmp_path), None, [], client=client_of(manager))
            await manager.close_session(session.id)
            await manager.services.store.append_events(session.id, left)
            bridge.sinks.clear()
            loaded = await manager.open_existing(
                session.id, str(tmp_path), None, [], replay=True, client=client_of(manager)
            )
            stored = [s.event for s in await manager.services.store.load_events(session.id)]
            await manager.close_session(session.id)
    return stored, bridge, loaded


async def test_checkpointed_text_of_a_killed_stream_is_stored_as_interrupted_and_replayed_once(tmp_path: Path) -> None:
    checkpoints = [
        AssistantTextCheckpointed(turn_id="t1", message_id="a1", model_id="scripted:model", thinking="Hm. "),
        AssistantTextCheckpointed(turn_id="t1", message_id="a1", model_id="scripted:model", text="Half of "),
        AssistantTextCheckpointed(turn_id="t1", message_id="a1", model_id="scripted:model", text="the answer"),
    ]
    stored, bridge, session = await _load_after_crash(tmp_path, [PROMPT, *checkpoints])
    repaired = AssistantMessageStored(
        turn_id="t1",
        message_id="a1",
        message=AssistantMessage(parts=[ThinkingPart(text="Hm. "), TextPart(text="Half of the answer")]),
        model_id="scripted:model",
        interrupted=True,
    )
    ended = TurnEnded(turn_id="t1", stop_reason="cancelled")
    assert stored == [PROMPT, *checkpoints, repaired, ended]
    (replayed,) = bridge.sinks.values()
    assert replayed.events == [PROMPT, repaired, ended], "the checkpoints are superseded by the repaired message"
    assert session.recorder.projection.history == [
        UserMessage(parts=[TextPart(text="go")]),
        AssistantMessage(parts=[TextPart(text="Half of the answer")]),
    ]


async def test_a_running_call_is_outcome_unknown_and_one_never_started_is_not_run(tmp_path: Path) -> None:
    first = ToolCallPart(id="c1", name="terminal", arguments='{"command": "make"}')
    second = ToolCallPart(id="c2", name="terminal", arguments='{"command": "make test"}')
    left: list[SessionEvent] = [
        PROMPT,
        AssistantMessageStored(
            turn_id="t1", message_id="a1", message=AssistantMessage(parts=[first, second]), model_id="scripted:model"
        ),
        *[
            ToolCallStarted(
                turn_id="t1", tool_call_id=c.id, name=c.name, title=c.arguments, tool_kind="execute", marks_run=True
            )
            for c in (first, second)
        ],
        ToolCallRunning(turn_id="t1", tool_call_id="c1"),
    ]
    stored, _bridge, session = await _load_after_crash(tmp_path, left)
    assert stored[len(left) :] == [
        _failed(first, "outcome_unknown", OUTCOME_UNKNOWN_TEXT),
        _failed(second, *NOT_RUN),
        TurnEnded(turn_id="t1", stop_reason="cancelled"),
    ]
    assert session.recorder.projection.open_calls == {}


def _failed(call: ToolCallPart, code: str, text: str) -> ToolCallSettled:
    return ToolCallSettled(
        turn_id="t1",
        tool_call_id=call.id,
        status="failed",
        content=[TextBlock(text=text)],
        result=ToolResultMessage(tool_call_id=call.id, name=call.name, parts=[TextPart(text=text)], is_error=True),
        error_code=code,
    )


def test_a_subagent_that_was_running_ends_unknown_and_one_that_ended_is_left_alone() -> None:
    from hermes_acp.core import SubagentEnded, SubagentStarted
    from hermes_acp.turns.projection import SessionProjection
    from hermes_acp.turns.recovery import recovery_events

    def started(child: str, call: str) -> SubagentStarted:
        return SubagentStarted(
            turn_id="t1",
            tool_call_id=call,
            session_id=child,
            title=child,
            description="",
            role="explore",
            model_id="m",
            cwd="/work",
        )

    projection = SessionProjection()
    log: list[SessionEvent] = [
        PROMPT,
        started("done", "d1"),
        SubagentEnded(turn_id="t1", tool_call_id="d1", session_id="done", outcome="completed", stop_reason="end_turn"),
        started("cut", "d2"),
    ]
    for event in log:
        projection.apply(event)
    repairs = recovery_events(projection)
    ended = [e for e in repairs if isinstance(e, SubagentEnded)]
    assert [(e.session_id, e.outcome, e.tool_call_id) for e in ended] == [("cut", "unknown", "d2")]
    assert ended[0].error == OUTCOME_UNKNOWN_TEXT
    for repair in repairs:
        projection.apply(repair)
    assert projection.open_children == [] and recovery_events(projection) == []
