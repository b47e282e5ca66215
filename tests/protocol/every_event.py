"""One stored session log holding every kind of event (and every kind of display block), for the rendering tests:
two turns, with thinking, a streamed checkpoint, tool calls (a diff, an agent-owned terminal, a v1 client terminal,
a failed and a cancelled call), plans (steps, proposal, cleared), a compaction, a title, queued, steered and dropped
input, a rewind, a subagent and a notice."""

from __future__ import annotations

from typing import get_args

from hermes_acp.core import (
    AgentTerminalBlock,
    AssistantMessage,
    AssistantMessageStored,
    AssistantTextCheckpointed,
    AudioBlock,
    ContextCompacted,
    DiffBlock,
    ImageBlock,
    InputDropped,
    InputQueued,
    Location,
    NoticeAdded,
    PermissionResolved,
    PlanEntry,
    PlanUpdated,
    ResourceBlock,
    ResourceLinkBlock,
    Rewound,
    SessionEvent,
    SteeringApplied,
    SubagentEnded,
    SubagentStarted,
    TerminalBlock,
    TextBlock,
    TextPart,
    ThinkingPart,
    TitleSet,
    ToolCallPart,
    ToolCallRunning,
    ToolCallSettled,
    ToolCallStarted,
    ToolResultMessage,
    TurnEnded,
    Usage,
    UserMessage,
    UserPrompted,
)
from hermes_acp.storage.base import StoredEvent

__all__ = ["EVENTS", "KINDS", "LOG", "stored"]

_PNG = "iVBORw0KGgo="
TERMINAL_OPEN = AgentTerminalBlock(
    terminal_id="call_run", command="make test", cwd="/w", fallback=[TextBlock(text="```sh\nmake test\n```")]
)
TERMINAL_DONE = AgentTerminalBlock(
    terminal_id="call_run",
    command="make test",
    cwd="/w",
    output="ok\n",
    ended=True,
    exit_code=0,
    fallback=[TextBlock(text="Exit code 0.\n```\nok\n```")],
)


def _result(call_id: str, text: str) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, name="tool", parts=[TextPart(text=text)])


EVENTS: list[SessionEvent] = [
    TitleSet(title="Fix the parser", updated_at="2026-01-02T03:04:05.000000Z"),
    UserPrompted(
        turn_id="t1",
        message_id="u1",
        display=[
            TextBlock(text="fix the parser"),
            ImageBlock(media_type="image/png", data=_PNG),
            AudioBlock(media_type="audio/wav", data="UklGRg=="),
            ResourceLinkBlock(uri="file:///w/parser.py", name="parser.py", media_type="text/x-python"),
            ResourceBlock(uri="file:///w/notes.md", media_type="text/markdown", text="# notes"),
            ResourceBlock(uri="file:///w/blob.bin", blob="AAEC"),
        ],
        message=UserMessage(parts=[TextPart(text="fix the parser")]),
    ),
    AssistantTextCheckpointed(turn_id="t1", message_id="a1", model_id="m", text="Looking", thinking="Hmm"),
    AssistantMessageStored(
        turn_id="t1",
        message_id="a1",
        message=AssistantMessage(
            parts=[
                ThinkingPart(text="Hmm, the tokenizer."),
                TextPart(text="Looking at it."),
                ToolCallPart(id="call_edit", name="edit_file", arguments="{}"),
                ToolCallPart(id="call_run", name="terminal", arguments="{}"),
            ]
        ),
        model_id="m",
        usage=Usage(input_tokens=100, output_tokens=20),
    ),
    ToolCallStarted(
        turn_id="t1",
        tool_call_id="call_edit",
        name="edit_file",
        title="Edit parser.py",
        tool_kind="edit",
        raw_input={"path": "/w/parser.py"},
        locations=[Location(path="/w/parser.py", line=3)],
        content=[DiffBlock(path="/w/parser.py", old_text="a\nb\n", new_text="a\nc\n")],
        marks_run=True,
    ),
    PermissionResolved(turn_id="t1", tool_call_id="call_edit", outcome="allow_once", scope="edit"),
    ToolCallRunning(turn_id="t1", tool_call_id="call_edit"),
    ToolCallSettled(
        turn_id="t1",
        tool_call_id="call_edit",
        status="completed",
        content=[
            DiffBlock(path="/w/parser.py", old_text="a\nb\n", new_text="a\nc\n"),
            DiffBlock(path="/w/new file.py", old_text=None, new_text="x = 1"),
        ],
        raw_output={"changed": 2},
        result=_result("call_edit", "edited"),
    ),
    ToolCallStarted(
        turn_id="t1",
        tool_call_id="call_run",
        name="terminal",
        title="Run `make test`",
        tool_kind="execute",
        content=[TERMINAL_OPEN],
        marks_run=True,
    ),
    ToolCallRunning(turn_id="t1", tool_call_id="call_run"),
    ToolCallSettled(
        turn_id="t1",
        tool_call_id="call_run",
        status="completed",
        content=[TERMINAL_DONE],
        result=_result("call_run", "ok"),
    ),
    ToolCallStarted(turn_id="t1", tool_call_id="call_client", name="terminal", title="Run `ls`", tool_kind="execute"),
    ToolCallSettled(
        turn_id="t1",
        tool_call_id="call_client",
        status="failed",
        content=[TerminalBlock(terminal_id="term_1"), TextBlock(text="ls: no such file")],
        result=_result("call_client", "failed"),
        error_code="nonzero_exit",
    ),
    ToolCallStarted(turn_id="t1", tool_call_id="call_stop", name="read_file", title="Read a.py", tool_kind="read"),
    ToolCallSettled(
        turn_id="t1",
        tool_call_id="call_stop",
        status="failed",
        content=[TextBlock(text="cancelled")],
        result=_result("call_stop", "cancelled"),
        error_code="cancelled",
    ),
    PlanUpdated(turn_id="t1", entries=[PlanEntry(content="Fix the tokenizer", status="in_progress")]),
    PlanUpdated(turn_id="t1", entries=[], plan_id="proposal", markdown="# Plan\n\n1. Fix it"),
    PlanUpdated(turn_id="t1", entries=[]),
    NoticeAdded(turn_id="t1", message_id="n1", text="Audio is not forwarded to the model.\n"),
    InputQueued(input_id="q1", input_kind="steering", display=[TextBlock(text="use regex")], turn_id="t1"),
    SteeringApplied(
        turn_id="t1",
        input_id="q1",
        message_id="s1",
        display=[TextBlock(text="use regex")],
        message=UserMessage(parts=[TextPart(text="use regex")]),
    ),
    InputQueued(input_id="q2", input_kind="prompt", display=[TextBlock(text="and the lexer")]),
    InputDropped(input_id="q2", input_kind="prompt", message_id="d1", text="Not run: the turn was cancelled."),
    SubagentStarted(
        turn_id="t1",
        tool_call_id="call_delegate",
        session_id="child_1",
        title="Explore",
        description="Find the tokenizer",
        role="explore",
        model_id="m",
        cwd="/w",
        additional_directories=["/lib"],
    ),
    SubagentEnded(
        turn_id="t1",
        tool_call_id="call_delegate",
        session_id="child_1",
        outcome="completed",
        stop_reason="end_turn",
        usage=Usage(input_tokens=10, output_tokens=5),
    ),
    ContextCompacted(
        turn_id="t1",
        compaction_id="c1",
        message_id="cm1",
        trigger="threshold",
        method="summary",
        replaced=4,
        summary="We fixed the parser.",
        model_id="m",
        tokens_before=9000,
        tokens_after=1200,
    ),
    TurnEnded(turn_id="t1", stop_reason="end_turn", usage=Usage(input_tokens=100, output_tokens=20)),
    UserPrompted(
        turn_id="t2",
        message_id="u2",
        display=[TextBlock(text="a task from the parent")],
        message=UserMessage(parts=[TextPart(text="a task from the parent")]),
        sender_session_id="parent_1",
    ),
    Rewound(turn_id="t2", message_id="r1", to_message_id="u2", text="Rewound to before your last message."),
    TurnEnded(turn_id="t2", stop_reason="cancelled"),
]
LOG: list[StoredEvent] = [
    StoredEvent(seq=seq, created_at="2026-01-02T03:04:05.000000Z", event=event)
    for seq, event in enumerate(EVENTS, start=1)
]
KINDS = frozenset(get_args(get_args(SessionEvent)[0]))
"""Every event class of the log's union."""


def stored(events: list[SessionEvent], start: int = 1) -> list[StoredEvent]:
    return [
        StoredEvent(seq=seq, created_at="2026-01-02T03:04:05.000000Z", event=event)
        for seq, event in enumerate(events, start=start)
    ]
