"""Projections of the session log that the turn loop needs: the model history, what a stop leaves open, the rules.

``SessionProjection.apply`` folds one stored event in. It is used for live events (as they are stored) and to
rebuild a loaded session from its log, so both paths see the same history (tool results in the order the model made
the calls, whatever order they were stored in). The model history starts from the latest compaction
(``compacted_history``: the summary in place of the messages it replaced, stubs in place of the tool results it cut);
the log, and with it the editor's transcript, keeps everything. Beside the history the projection keeps what context
accounting needs: the last reported usage (``anchor``) and every model's usage so far (for the session's cost).
``transcript_events`` picks the events a replay renders (a checkpoint of a message stored complete later is left
out). Pure data; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from hermes_acp.core import (
    AgentTerminalBlock,
    AssistantMessage,
    AssistantMessageStored,
    AssistantTextCheckpointed,
    ContextCompacted,
    DisplayBlock,
    InputDropped,
    InputKind,
    InputQueued,
    Message,
    PermissionResolved,
    SessionEvent,
    SteeringApplied,
    SubagentEnded,
    SubagentOutcome,
    SubagentStarted,
    TextPart,
    TitleSet,
    ToolCallRunning,
    ToolCallSettled,
    ToolCallStarted,
    ToolResultMessage,
    TurnEnded,
    Usage,
    UserMessage,
    UserPrompted,
)

__all__ = [
    "Anchor",
    "Child",
    "OpenCall",
    "OpenText",
    "PendingInput",
    "SessionProjection",
    "compacted_history",
    "summary_text",
    "transcript_events",
]

SUMMARY_HEADER = (
    "[This conversation was compacted to fit the context window. The earlier part is replaced by this summary"
    " of it:]\n\n"
)
SUMMARY_FOOTER = "\n\n[End of the summary. The conversation goes on from here.]"
DROPPED = (
    "[The {count} earliest messages of this conversation were dropped to fit the context window (summarising them"
    " failed). If something from before matters, ask the user.]"
)


@dataclass(frozen=True, slots=True)
class Anchor:
    """The last usage a provider reported: the context its request and response took, in tokens."""

    tokens: int
    messages: int
    """How many messages the model's history held after that response."""
    fixed: int | None = None
    """The estimated system prompt and tool schemas of that request; None when unknown (a reloaded session)."""


@dataclass(frozen=True, slots=True)
class OpenCall:
    """An announced or requested tool call without a result yet."""

    name: str
    turn_id: str
    from_model: bool
    """True for a call the model made (its result belongs in the history); False for one the agent made on the
    user's behalf, such as reading a prompt attachment (the model never saw the call, so it gets no result)."""
    marks_run: bool = False
    """The log stores a ``ToolCallRunning`` before this call runs (see ``ToolCallStarted.marks_run``)."""
    running: bool = False
    """A ``ToolCallRunning`` was stored: the call ran, or was running, if it stops without a result."""
    terminals: tuple[AgentTerminalBlock, ...] = ()
    """The agent-owned terminals its first content announced (its settlement must close them)."""

    @property
    def may_have_run(self) -> bool:
        """False only when the log proves the call never started."""
        return self.running or not self.marks_run


@dataclass(frozen=True, slots=True)
class OpenText:
    """The checkpointed text of a response that has no complete ``AssistantMessageStored`` yet."""

    turn_id: str
    model_id: str
    text: str = ""
    thinking: str = ""


@dataclass(frozen=True, slots=True)
class PendingInput:
    """A queued prompt or a steering message the log has not resolved yet (it neither ran nor was dropped)."""

    input_kind: InputKind
    display: list[DisplayBlock]
    turn_id: str | None


@dataclass(frozen=True, slots=True)
class Child:
    """A subagent this session started (``SubagentStarted``) and, once it ended, how (``SubagentEnded``)."""

    session_id: str
    tool_call_id: str
    turn_id: str
    title: str
    model_id: str
    outcome: SubagentOutcome | None = None
    """None while it runs (or, in a log a crash cut short, until the repair stores ``unknown``)."""
    usage: Usage = field(default_factory=Usage)
    usage_by_model: dict[str, Usage] = field(default_factory=dict)


@dataclass
class SessionProjection:
    history: list[Message] = field(default_factory=list)
    rules: dict[str, Literal["allow", "deny"]] = field(default_factory=dict)
    tool_call_ids: set[str] = field(default_factory=set)
    """Every tool-call id used in the session (ids must be unique across turns)."""
    open_calls: dict[str, OpenCall] = field(default_factory=dict)
    """Announced or requested tool calls without a result yet, by id."""
    open_texts: dict[str, OpenText] = field(default_factory=dict)
    """Checkpointed responses without their complete message yet, by message id."""
    open_turns: set[str] = field(default_factory=set)
    title: str | None = None
    first_prompt: str | None = None
    anchor: Anchor | None = None
    """The last usage a provider reported and where the history stood then; None after a compaction until the next
    response reports usage."""
    sent_fixed: int | None = None
    """In memory only: the estimated system prompt and tool schemas of the request being answered (the loop sets
    it before each request; the next reported usage is anchored with it)."""
    usage_by_model: dict[str, Usage] = field(default_factory=dict)
    """Every model call's reported usage so far, summed by model id (the session's cost)."""
    compactions: int = 0
    compaction_id: str | None = None
    """The latest compaction's."""
    pending_inputs: dict[str, PendingInput] = field(default_factory=dict)
    """Queued prompts and steering messages not yet run, applied or dropped, by input id, in arrival order."""
    children: dict[str, Child] = field(default_factory=dict)
    """The subagents this session started, by child session id, in the order they started."""

    @property
    def open_children(self) -> list[Child]:
        """Children started and not ended (running now, or cut short by a crash)."""
        return [child for child in self.children.values() if child.outcome is None]

    def children_usage_by_model(self) -> dict[str, Usage]:
        """What every ended child used, summed by model id (the children's share of the session's cost)."""
        total: dict[str, Usage] = {}
        for child in self.children.values():
            for model_id, usage in child.usage_by_model.items():
                before = total.get(model_id)
                total[model_id] = usage if before is None else before + usage
        return total

    def apply(self, event: SessionEvent) -> None:
        match event:
            case UserPrompted():
                self.open_turns.add(event.turn_id)
                if event.input_id is not None:
                    self.pending_inputs.pop(event.input_id, None)
                if not event.for_model:
                    return
                text = "".join(p.text for p in event.message.parts if isinstance(p, TextPart))
                if self.first_prompt is None and text.strip():  # an image-only prompt cannot name the session
                    self.first_prompt = text
                self._append_user(event.message)
            case AssistantMessageStored():
                self.open_texts.pop(event.message_id, None)
                message = event.message
                if event.interrupted:  # what had arrived: the text is kept for the model, the reasoning is not
                    message = AssistantMessage(parts=[p for p in message.parts if isinstance(p, TextPart)])
                if message.parts:
                    self.history.append(message)
                if event.usage is not None:
                    self._add_usage(event.model_id, event.usage)
                    if _measures_context(event):
                        tokens = event.usage.input_tokens + event.usage.output_tokens
                        self.anchor = Anchor(tokens, len(self.history), self.sent_fixed)
                for call in message.tool_calls:
                    self.tool_call_ids.add(call.id)
                    self.open_calls[call.id] = OpenCall(call.name, event.turn_id, from_model=True)
            case AssistantTextCheckpointed():
                before = self.open_texts.get(event.message_id) or OpenText(event.turn_id, event.model_id)
                self.open_texts[event.message_id] = replace(
                    before, text=before.text + event.text, thinking=before.thinking + event.thinking
                )
            case ToolCallStarted():
                self.tool_call_ids.add(event.tool_call_id)
                known = self.open_calls.get(event.tool_call_id)
                terminals = tuple(b for b in event.content if isinstance(b, AgentTerminalBlock))
                if known is not None:
                    self.open_calls[event.tool_call_id] = replace(known, marks_run=event.marks_run, terminals=terminals)
                else:
                    self.open_calls[event.tool_call_id] = OpenCall(
                        event.name, event.turn_id, from_model=False, marks_run=event.marks_run, terminals=terminals
                    )
            case ToolCallRunning():
                running = self.open_calls.get(event.tool_call_id)
                if running is not None:
                    self.open_calls[event.tool_call_id] = replace(running, running=True)
            case ToolCallSettled():
                self.open_calls.pop(event.tool_call_id, None)
                if event.result is not None:
                    self._append_result(event.result)
            case PermissionResolved():
                if event.outcome == "allow_always":
                    self.rules[event.scope] = "allow"
                elif event.outcome == "reject_always":
                    self.rules[event.scope] = "deny"
            case TurnEnded():
                self.open_turns.discard(event.turn_id)
            case TitleSet():
                self.title = event.title
                if event.usage is not None and event.model_id is not None:
                    self._add_usage(event.model_id, event.usage)
            case InputQueued():
                self.pending_inputs[event.input_id] = PendingInput(event.input_kind, event.display, event.turn_id)
            case SteeringApplied():
                self.pending_inputs.pop(event.input_id, None)
                self._append_user(event.message)
            case InputDropped():
                self.pending_inputs.pop(event.input_id, None)
            case SubagentStarted():
                self.children[event.session_id] = Child(
                    event.session_id, event.tool_call_id, event.turn_id, event.title, event.model_id
                )
            case SubagentEnded():
                child = self.children.get(event.session_id)
                if child is not None:
                    self.children[event.session_id] = replace(
                        child, outcome=event.outcome, usage=event.usage, usage_by_model=dict(event.usage_by_model)
                    )
            case ContextCompacted():
                self.history = compacted_history(self.history, event)
                self.anchor = None
                self.compactions += 1
                self.compaction_id = event.compaction_id
                if event.usage is not None and event.model_id is not None:
                    self._add_usage(event.model_id, event.usage)
            case _:
                pass

    def _add_usage(self, model_id: str, usage: Usage) -> None:
        before = self.usage_by_model.get(model_id)
        self.usage_by_model[model_id] = usage if before is None else before + usage

    def _append_result(self, result: ToolResultMessage) -> None:
        """A tool result goes after its response's other results in the order the model made the calls, whatever
        order they settled in (calls that only read run together and finish in any order). The log keeps the order
        they settled in; this is where the model's order is restored, live and on a reload alike."""
        history = self.history
        first = len(history)
        while first > 0 and isinstance(history[first - 1], ToolResultMessage):
            first -= 1
        response = history[first - 1] if first > 0 else None
        calls = response.tool_calls if isinstance(response, AssistantMessage) else []
        order = {call.id: i for i, call in enumerate(calls)}
        rank = order.get(result.tool_call_id, len(order))
        at = len(history)
        while at > first:
            before = history[at - 1]
            if not isinstance(before, ToolResultMessage) or order.get(before.tool_call_id, -1) <= rank:
                break
            at -= 1
        history.insert(at, result)

    def _append_user(self, message: UserMessage) -> None:
        """Consecutive user messages (a turn that produced no answer) merge, so roles keep alternating."""
        last = self.history[-1] if self.history else None
        if isinstance(last, UserMessage):
            # Both sides were validated when they were built; do not re-validate the growing list.
            self.history[-1] = UserMessage.model_construct(parts=[*last.parts, TextPart(text="\n\n"), *message.parts])
        else:
            self.history.append(message)


def _measures_context(event: AssistantMessageStored) -> bool:
    """Whether the response's reported usage is the size of its request: not when nothing was reported, not for an
    interrupted response, and not when it is more than the model can hold (a provider that ran tools of its own,
    such as a web search, may report the sum of its rounds)."""
    usage = event.usage
    if usage is None or usage.input_tokens <= 0 or event.interrupted:
        return False
    return event.context_window is None or usage.input_tokens <= event.context_window


def summary_text(event: ContextCompacted, replaced: int | None = None) -> str | None:
    """What the model reads in place of the messages ``event`` replaced; None when it replaced none."""
    count = event.replaced if replaced is None else replaced
    if count == 0:
        return None
    if event.method == "summary":
        return SUMMARY_HEADER + event.summary + SUMMARY_FOOTER
    return DROPPED.format(count=count)


def compacted_history(history: Sequence[Message], event: ContextCompacted) -> list[Message]:
    """``history`` as the model reads it after ``event``: its summary first (merged into the first kept message when
    that is the user's, so roles keep alternating), then the kept messages with the cut tool results as stubs."""
    replaced = min(event.replaced, len(history))
    kept = [_stubbed(m, event.stubs) for m in history[replaced:]]
    text = summary_text(event, replaced)
    if text is None:
        return kept
    first = kept[0] if kept else None
    if isinstance(first, UserMessage):
        return [UserMessage(parts=[TextPart(text=text), TextPart(text="\n\n"), *first.parts]), *kept[1:]]
    return [UserMessage(parts=[TextPart(text=text)]), *kept]


def _stubbed(message: Message, stubs: dict[str, str]) -> Message:
    if not isinstance(message, ToolResultMessage) or message.tool_call_id not in stubs:
        return message
    return message.model_copy(update={"parts": [TextPart(text=stubs[message.tool_call_id])]})


def transcript_events(events: Sequence[SessionEvent]) -> list[SessionEvent]:
    """The events a replay renders, in order: a checkpoint is left out when its message is stored complete later
    (the complete message shows the whole text); the checkpoints of a message still streaming are kept."""
    complete = {e.message_id for e in events if isinstance(e, AssistantMessageStored)}
    return [e for e in events if not (isinstance(e, AssistantTextCheckpointed) and e.message_id in complete)]
