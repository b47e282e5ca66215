"""A session's timeline: what its rewinds cut from the log, folded in order (docs/architecture.md §6.10)."""

from __future__ import annotations

from hermes_acp.core import (
    AssistantMessage,
    AssistantMessageStored,
    InputQueued,
    Rewound,
    SessionEvent,
    TextBlock,
    TextPart,
    TitleSet,
    ToolCallPart,
    ToolCallSettled,
    ToolCallStarted,
    ToolResultMessage,
    TurnEnded,
    UserMessage,
    UserPrompted,
)
from hermes_acp.turns.timeline import effective_events, fork_point, project, user_prompts


def _prompt(n: int, *, for_model: bool = True, input_id: str | None = None) -> UserPrompted:
    return UserPrompted(
        turn_id=f"t{n}",
        message_id=f"u{n}",
        display=[TextBlock(text=f"prompt {n}")],
        message=UserMessage(parts=[TextPart(text=f"prompt {n}")]),
        for_model=for_model,
        input_id=input_id,
    )


def _answer(n: int) -> AssistantMessageStored:
    return AssistantMessageStored(
        turn_id=f"t{n}",
        message_id=f"a{n}",
        message=AssistantMessage(parts=[TextPart(text=f"answer {n}")]),
        model_id="m",
    )


def _turn(n: int) -> list[SessionEvent]:
    return [_prompt(n), _answer(n), TurnEnded(turn_id=f"t{n}", stop_reason="end_turn")]


def _rewind(to: int, n: int) -> Rewound:
    return Rewound(turn_id=f"r{n}", message_id=f"rw{n}", to_message_id=f"u{to}", text=f"rewound to {to}")


def _ids(events: list[SessionEvent]) -> list[str]:
    return [getattr(e, "message_id", e.kind) for e in events]


def test_a_rewind_cuts_its_prompt_and_everything_up_to_itself() -> None:
    log = [*_turn(1), *_turn(2), *_turn(3), _rewind(2, 1), *_turn(4)]
    assert _ids(effective_events(log)) == ["u1", "a1", "turn_ended", "rw1", "u4", "a4", "turn_ended"]
    assert project(log).history == [
        UserMessage(parts=[TextPart(text="prompt 1")]),
        AssistantMessage(parts=[TextPart(text="answer 1")]),
        UserMessage(parts=[TextPart(text="prompt 4")]),
        AssistantMessage(parts=[TextPart(text="answer 4")]),
    ]


def test_undo_twice_folds_the_same_as_one_rewind_further_back_and_cuts_the_first_rewind_too() -> None:
    log = [*_turn(1), *_turn(2), *_turn(3), _rewind(3, 1), _rewind(2, 2)]
    assert _ids(effective_events(log)) == ["u1", "a1", "turn_ended", "rw2"]
    assert [p.message_id for p in user_prompts(effective_events(log))] == ["u1"]


def test_a_rewind_to_a_point_an_earlier_rewind_cut_changes_nothing_more() -> None:
    log = [*_turn(1), *_turn(2), _rewind(2, 1), *_turn(3), _rewind(2, 2)]
    assert _ids(effective_events(log)) == ["u1", "a1", "turn_ended", "rw1", "u3", "a3", "turn_ended", "rw2"]


def test_titles_and_still_waiting_inputs_survive_a_cut_and_resolved_ones_do_not() -> None:
    waiting = InputQueued(input_id="waiting", input_kind="prompt", display=[TextBlock(text="later")])
    resolved = InputQueued(input_id="ran", input_kind="prompt", display=[TextBlock(text="ran")])
    log = [
        *_turn(1),
        _prompt(2),
        TitleSet(title="Named"),
        resolved,
        waiting,
        _prompt(9, input_id="ran"),
        _rewind(2, 1),
    ]
    kept = effective_events(log)
    assert [e for e in kept if isinstance(e, TitleSet | InputQueued)] == [TitleSet(title="Named"), waiting]
    projection = project(log)
    assert projection.title == "Named"
    assert list(projection.pending_inputs) == ["waiting"]


def test_only_prompts_the_model_got_are_points_to_rewind_to() -> None:
    log = [*_turn(1), _prompt(2, for_model=False), *_turn(3)]
    assert [(p.message_id, p.text, p.index) for p in user_prompts(log)] == [
        ("u1", "prompt 1", 0),
        ("u3", "prompt 3", 4),
    ]


def test_a_fork_at_an_agent_message_keeps_its_calls_and_their_results() -> None:
    call = ToolCallPart(id="c1", name="echo", arguments="{}")
    message = AssistantMessageStored(
        turn_id="t1", message_id="a1", message=AssistantMessage(parts=[TextPart(text="calling"), call]), model_id="m"
    )
    started = ToolCallStarted(turn_id="t1", tool_call_id="c1", name="echo", title="Echo", tool_kind="other")
    settled = ToolCallSettled(
        turn_id="t1",
        tool_call_id="c1",
        status="completed",
        result=ToolResultMessage(tool_call_id="c1", name="echo", parts=[TextPart(text="ok")]),
    )
    log: list[SessionEvent] = [
        _prompt(1),
        message,
        started,
        settled,
        _answer(2),
        TurnEnded(turn_id="t1", stop_reason="end_turn"),
    ]
    assert fork_point(log, "a1") == 3
    assert fork_point(log, "u1") == 0
    assert fork_point(log, "a2") == 4
    assert fork_point(log, "nope") is None
