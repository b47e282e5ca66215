"""The durable session log: one event type per thing that happened in a session.

The log is the truth (docs/architecture.md §4.2). The model history (``hermes_acp.turns.projection``) and the editor
transcript (``hermes_acp.protocol.convert``) are both projections of it, so what an editor sees live and what it sees
after ``session/load`` come from the same records. Events are immutable once stored; nothing here knows SQLite or ACP.
"""

from __future__ import annotations

import base64
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from .content import DisplayBlock, Location
from .messages import AssistantMessage, ToolResultMessage, UserMessage

__all__ = [
    "AssistantMessageStored",
    "AssistantTextCheckpointed",
    "CompactionMethod",
    "CompactionTrigger",
    "ContextCompacted",
    "FileChange",
    "FileNotRestored",
    "InputDropped",
    "InputKind",
    "InputQueued",
    "NoticeAdded",
    "PermissionResolved",
    "PlanEntry",
    "PlanUpdated",
    "Rewound",
    "SessionEvent",
    "SessionEventAdapter",
    "SteeringApplied",
    "StopReason",
    "SubagentEnded",
    "SubagentOutcome",
    "SubagentRole",
    "SubagentStarted",
    "TitleSet",
    "ToolCallRunning",
    "ToolCallSettled",
    "ToolCallStarted",
    "ToolKind",
    "ToolStatus",
    "TurnEnded",
    "Usage",
    "UserPrompted",
]

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
CompactionTrigger = Literal["threshold", "overflow", "manual"]
"""Why a compaction ran: the next request would pass the threshold, the provider answered that the request does not
fit, or the user asked (``/compact``)."""
CompactionMethod = Literal["summary", "dropped", "stubs"]
"""How the older part was replaced: by a model-written summary; by a note saying it was dropped (the summary request
failed); or nothing was replaced and only tool results were cut to stubs."""
ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]
ToolStatus = Literal["completed", "failed"]
InputKind = Literal["prompt", "steering"]
"""What waits in a session's queue: a prompt (``session/prompt`` while a turn runs) or a steering message for the
running turn (``_session/steering``)."""
SubagentRole = Literal["explore", "general"]
"""What a child may do: ``explore`` reads only; ``general`` has its parent's tools under its parent's mode."""
SubagentOutcome = Literal["completed", "failed", "budget", "cancelled", "unknown"]
"""How a child's work ended: its report written; its provider failed; it reached its budget; the user (or the
parent's cancel) stopped it; or the server stopped while it ran (``unknown``: never run again)."""


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Usage(_Event):
    """Token counts of one model call (or a sum of several)."""

    input_tokens: int = 0
    """Prompt tokens, including cached ones."""
    output_tokens: int = 0
    cached_read_tokens: int = 0
    cache_write_tokens: int = 0
    thought_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_read_tokens=self.cached_read_tokens + other.cached_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            thought_tokens=self.thought_tokens + other.thought_tokens,
        )


class UserPrompted(_Event):
    """The user sent a prompt. ``display`` is what the editor showed; ``message`` is what the model gets."""

    kind: Literal["user_prompted"] = "user_prompted"
    turn_id: str
    message_id: str
    display: list[DisplayBlock]
    message: UserMessage
    for_model: bool = True
    """False for slash commands and for a prompt whose turn stopped while it was converted (e.g. a cancel while an
    attachment read was being asked about): shown in the transcript, never sent to the model."""
    input_id: str | None = None
    """The ``InputQueued`` this prompt waited as (None: it did not have to wait)."""
    sender_session_id: str | None = None
    """The session that sent this prompt, when it came from one (a parent's task for its subagent), not a user."""


class AssistantMessageStored(_Event):
    """One complete model response, stored before any of its tool calls runs (docs/architecture.md §4.3)."""

    kind: Literal["assistant_message"] = "assistant_message"
    turn_id: str
    message_id: str
    message: AssistantMessage
    model_id: str
    usage: Usage | None = None
    context_window: int | None = None
    interrupted: bool = False
    """True when the stream broke off or was cancelled: the text is what had arrived, without tool calls."""


class AssistantTextCheckpointed(_Event):
    """Text and reasoning of a response still streaming, stored at a bounded interval so a crash keeps what was
    shown. Each checkpoint holds what arrived since the previous one of the same ``message_id``; the complete
    ``AssistantMessageStored`` with that id supersedes them all. Crash recovery turns the checkpoints of a message
    that never completed into an interrupted ``AssistantMessageStored``."""

    kind: Literal["assistant_text_checkpointed"] = "assistant_text_checkpointed"
    turn_id: str
    message_id: str
    model_id: str
    text: str = ""
    thinking: str = ""


class ToolCallStarted(_Event):
    """A tool call as the editor sees it first: title, kind, locations, raw input, initial content."""

    kind: Literal["tool_call_started"] = "tool_call_started"
    turn_id: str
    tool_call_id: str
    name: str
    title: str
    tool_kind: ToolKind
    raw_input: Any = None
    locations: list[Location] = Field(default_factory=list)
    content: list[DisplayBlock] = Field(default_factory=list)
    marks_run: bool = False
    """True when a ``ToolCallRunning`` is stored before this call runs, so an open call without one certainly did
    not run. Logs written before that event existed leave it False: their open calls may have run."""


class FileChange(_Event):
    """One file a tool call is about to change, as its approval saw it: enough to put the file back later and to
    tell whether someone else changed it since.

    ``before`` is the file's exact content before the change (``None``: the file did not exist), as text when it is
    UTF-8 and as base64 otherwise (``before_encoding``); the hashes are SHA-256 of the bytes, before and after. The
    file tools cap both sides at 1 MiB (``tools/_snapshot.py``), so one record holds at most 1 MiB of content (about
    1.34 MiB as base64). Kept verbatim for restores: it is neither shown to the editor nor read by the model, so
    the sanitizer does not touch it."""

    path: str
    before: str | None
    before_encoding: Literal["utf-8", "base64"] = "utf-8"
    before_sha256: str | None
    """None when the file did not exist."""
    after_sha256: str
    real_path: str | None = None
    """Where the write went when ``path`` led elsewhere through a link: the path the approval resolved and judged
    (a rewind puts that file back). None: ``path`` itself."""

    def before_bytes(self) -> bytes | None:
        """The exact bytes the file held before the change (None: it did not exist)."""
        if self.before is None:
            return None
        return base64.b64decode(self.before) if self.before_encoding == "base64" else self.before.encode("utf-8")


class ToolCallRunning(_Event):
    """The call is about to run: approved, and stored before it starts (persist before execute). A call that has
    this and no settlement ran, or was running, when the turn stopped; one without it never started.

    ``file_changes`` are the files the call will write if its last check passes (the file has not changed since
    its approval): stored before the write, so the content each had survives a crash in the middle. Whether the
    write happened is the settlement's ``status`` (``completed``: written; ``failed``: the tool refused or the
    write failed, nothing written); a call that never settled may have written, and the hashes tell."""

    kind: Literal["tool_call_running"] = "tool_call_running"
    turn_id: str
    tool_call_id: str
    file_changes: list[FileChange] = Field(default_factory=list)


class PermissionResolved(_Event):
    """The answer to a permission question; an ``allow_always`` / ``reject_always`` outcome is a rule for ``scope``
    from now on."""

    kind: Literal["permission_resolved"] = "permission_resolved"
    turn_id: str
    tool_call_id: str
    outcome: Literal["allow_once", "allow_always", "reject_once", "reject_always", "cancelled", "timeout"]
    scope: str
    """The rule key the decision applies to (e.g. ``edit``, ``execute``, ``computer_use:foreground``)."""


class ToolCallSettled(_Event):
    """The final state of a tool call: completed or failed, what the editor shows and what the model reads."""

    kind: Literal["tool_call_settled"] = "tool_call_settled"
    turn_id: str
    tool_call_id: str
    status: ToolStatus
    content: list[DisplayBlock] = Field(default_factory=list)
    raw_output: Any = None
    result: ToolResultMessage | None
    """What the model reads; None for calls the agent made on the user's behalf outside the model's history."""
    error_code: str | None = None


class PlanEntry(_Event):
    content: str
    priority: Literal["high", "medium", "low"] = "medium"
    status: Literal["pending", "in_progress", "completed"] = "pending"


STEPS_PLAN_ID = "steps"
"""The plan ``update_plan`` keeps: its steps, always the complete list."""
PROPOSAL_PLAN_ID = "proposal"
"""The plan the user approved when leaving plan mode (``exit_plan_mode``), in Markdown."""


class PlanUpdated(_Event):
    """One of the agent's plans, whole: the steps of ``update_plan`` (``entries``, the complete list; empty: the
    plan was cleared), or the approved proposal of plan mode (``markdown``)."""

    kind: Literal["plan_updated"] = "plan_updated"
    turn_id: str
    entries: list[PlanEntry]
    plan_id: str = STEPS_PLAN_ID
    markdown: str | None = None


class NoticeAdded(_Event):
    """A message for the user that the model does not see (e.g. "audio is not forwarded")."""

    kind: Literal["notice_added"] = "notice_added"
    turn_id: str
    message_id: str
    text: str


class TurnEnded(_Event):
    """A prompt turn finished, with why and what it cost."""

    kind: Literal["turn_ended"] = "turn_ended"
    turn_id: str
    stop_reason: StopReason
    usage: Usage = Field(default_factory=Usage)


class ContextCompacted(_Event):
    """The model's history was compacted to fit its context window. From here on the model reads ``summary`` in
    place of the first ``replaced`` messages of its history (as it stood just before this event), and each tool
    result named in ``stubs`` as its stub text; every other message stays as it was. Nothing is deleted: the editor's
    transcript, ``session/load`` and fork keep every earlier event. Stored in one write once the compaction finished,
    so a server killed while it ran leaves the old history, and one killed after it leaves this one."""

    kind: Literal["context_compacted"] = "context_compacted"
    turn_id: str
    compaction_id: str
    message_id: str
    """Of the agent message that reports the compaction to an editor without compaction updates."""
    trigger: CompactionTrigger
    method: CompactionMethod
    replaced: int = Field(ge=0)
    """How many messages, from the start of the model's history, ``summary`` replaces."""
    summary: str = ""
    """What the summarising model wrote about the replaced messages (empty when they were dropped instead)."""
    stubs: dict[str, str] = Field(default_factory=dict)
    """Tool results of the kept messages cut to a stub that says what was cut, by tool-call id."""
    model_id: str | None = None
    """The model that wrote the summary."""
    usage: Usage | None = None
    """What the summary request cost."""
    tokens_before: int = 0
    """The context the next request would have taken without the compaction (tokens, as accounted)."""
    tokens_after: int = 0
    """The same, estimated, with it."""
    instructions: str | None = None
    """The focus the user gave ``/compact``."""
    error: str | None = None
    """Why the summary request failed (``dropped``)."""


class InputQueued(_Event):
    """A prompt that has to wait for the turn before it, or a steering message for the running turn, stored when it
    arrives: a server killed before it ran (or was applied) reports it as not run instead of losing it. It is
    resolved by the ``UserPrompted`` with its ``input_id`` (the prompt started), a ``SteeringApplied`` or an
    ``InputDropped``."""

    kind: Literal["input_queued"] = "input_queued"
    input_id: str
    input_kind: InputKind
    display: list[DisplayBlock]
    turn_id: str | None = None
    """The turn a steering message was sent to (None for a prompt)."""


class SteeringApplied(_Event):
    """A steering message added to the running turn at a safe point (between two model requests, once the calls of
    the response before have settled): a user message the model reads from the next request on, shown in the
    transcript where it was applied."""

    kind: Literal["steering_applied"] = "steering_applied"
    turn_id: str
    input_id: str
    message_id: str
    display: list[DisplayBlock]
    message: UserMessage


class InputDropped(_Event):
    """A queued prompt or a steering message that was not run (or not applied), and why, in words the user reads in
    the transcript (``text``)."""

    kind: Literal["input_dropped"] = "input_dropped"
    input_id: str
    input_kind: InputKind
    message_id: str
    text: str
    turn_id: str | None = None


class FileNotRestored(_Event):
    """A file a rewind did not put back, and why (changed since by someone else and not confirmed, ``read_only``
    mode, a write that failed)."""

    path: str
    reason: str


class Rewound(_Event):
    """The session went back to just before the user message ``to_message_id``: from here on its history (for the
    model, the transcript and a replay) is the log without that message and everything after it up to this event
    (``hermes_acp.turns.timeline``); the events stay in the log. What was cut lives on, whole, in the session
    ``moved_to`` ("… (before rewind)"). ``restored`` are the files the agent's file tools had changed since, put back
    to their content at that point; ``not_restored`` the ones left as they are; ``commands`` the commands that ran
    after that point, which a rewind cannot undo. ``text`` is what the user is shown."""

    kind: Literal["rewound"] = "rewound"
    turn_id: str
    message_id: str
    """Of the agent message that reports the rewind."""
    to_message_id: str
    moved_to: str | None = None
    restored: list[str] = Field(default_factory=list)
    not_restored: list[FileNotRestored] = Field(default_factory=list)
    commands: list[str] = Field(default_factory=list)
    text: str


class SubagentStarted(_Event):
    """A ``delegate`` call of this session started a child session (stored in the parent's log, after the child's
    record and before any of its traffic): what the editor announces and what a replay expands in place."""

    kind: Literal["subagent_started"] = "subagent_started"
    turn_id: str
    tool_call_id: str
    session_id: str
    """The child's."""
    title: str
    description: str
    role: SubagentRole
    model_id: str
    cwd: str
    additional_directories: list[str] = Field(default_factory=list)


class SubagentEnded(_Event):
    """A child's work ended (stored in the parent's log before the ``delegate`` call settles; crash recovery stores
    one with ``outcome="unknown"`` for a child that was running)."""

    kind: Literal["subagent_ended"] = "subagent_ended"
    turn_id: str
    tool_call_id: str
    session_id: str
    outcome: SubagentOutcome
    stop_reason: StopReason | None = None
    """How the child's last turn ended; None when it never ended (``unknown``)."""
    error: str | None = None
    """Why it failed, reached its budget or stopped, in words for the model and the user."""
    usage: Usage = Field(default_factory=Usage)
    """Every model call of the child, summed."""
    usage_by_model: dict[str, Usage] = Field(default_factory=dict)
    """The same by model id, for the cost."""


class TitleSet(_Event):
    """The session got a (generated or explicit) title."""

    kind: Literal["title_set"] = "title_set"
    title: str
    updated_at: str | None = None
    """When the title was set (ISO 8601); absent in logs written before it was recorded."""
    model_id: str | None = None
    """The model asked to write it (``agent.title_model``); None for a title derived from the prompt or set by a
    client, and in logs written before the request was counted."""
    usage: Usage | None = None
    """What that request cost (counted in the session's spend, as a model turn's is), whether or not its answer
    made the title."""


SessionEvent = Annotated[
    UserPrompted
    | AssistantMessageStored
    | AssistantTextCheckpointed
    | ToolCallStarted
    | ToolCallRunning
    | PermissionResolved
    | ToolCallSettled
    | PlanUpdated
    | NoticeAdded
    | TurnEnded
    | ContextCompacted
    | TitleSet
    | InputQueued
    | SteeringApplied
    | InputDropped
    | Rewound
    | SubagentStarted
    | SubagentEnded,
    Field(discriminator="kind"),
]
SessionEventAdapter: TypeAdapter[SessionEvent] = TypeAdapter(SessionEvent, config=ConfigDict(defer_build=True))
"""Built on first use: a process that never reads or writes an event does not pay for the union."""
