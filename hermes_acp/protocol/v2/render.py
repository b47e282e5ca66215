"""Stored session events and live updates as ACP v2 ``session/update`` payloads, beside the v1 rendering
(``protocol/convert.py``) and from the same log.

v2 changes the shape, not the substance, so each stored event maps to v2 one to one, through the same helpers
where the shape did not change (content blocks, plans, compaction summaries, subagents, usage):

- messages are upserts by id: the user's prompt is a ``user_message`` (live too: v2 asks the agent to echo it; its
  id is the ``messageId`` the prompt's response carries), a complete response an ``agent_thought`` and an
  ``agent_message`` (live too: the whole-message upsert makes what streamed as chunks authoritative, so a client
  that rejoins mid-response ends with the stored text). Notices, dropped inputs and rewinds stored as text are agent
  messages of their own id. A thought's id is derived from its response's (``thought_id``): v2 keys thoughts and
  answers apart, and the derivation gives a session made on v1 the same ids;
- tool calls are ``tool_call_update`` upserts from their first appearance (v1's ``tool_call`` is gone), with v2's
  content: a diff is a change list with a git patch (``diff_content``), an agent-owned terminal a
  ``{"type": "terminal"}`` reference whose state goes as ``terminal_update`` / ``terminal_output_chunk``
  (``terminal_cards.v2_updates``), and a v1 client terminal is never named (v2 has none; its output is stored
  beside it as text). A call settled as cancelled (``error_code`` ``cancelled``) is ``cancelled``;
- plans always go by id (``plan_update`` items, the approved proposal as Markdown, ``plan_removed``), compactions as
  ``compaction_update``, child sessions as ``subagent_update``: all baseline in v2;
- the turn's end is ``state_update`` idle with its stop reason (and usage), live only (``state_update``,
  ``turn_state``): a replay sends no idle per replayed turn, since a client counts each idle as a completion; the
  one snapshot after a replay (``protocol/v2/replay.py``) covers it.

``live`` is False for a replay (``session/resume`` with ``replayFrom``, a rejoin by cursor). It changes only what the
client cannot have from the live path: text checkpoints render as chunks on a replay (live, they streamed), an
ended terminal's kept output is a replacement snapshot (live, it streamed), a replayed turn end renders nothing,
and nothing replayed advertises a cancel (a call that still runs is offered its cancels after the catch-up, as
``LiveCancelOpen`` patches: ``capabilities`` alone). Everything else is byte for byte the same, so live and replayed
frames agree by construction.

``Features`` is the per-connection part: what the server routes on this connection (``tool_call/cancel``,
``terminal/cancel``), which decides the cancel capabilities entities advertise. Everything a v1 client had to
advertise (notices, compaction, plans, terminal cards, subagents, boolean options) is baseline in v2, so nothing
else varies. No I/O; nothing here knows sessions or connections.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, assert_never

from hermes_acp.core import (
    AgentTerminalBlock,
    AssistantMessageStored,
    AssistantTextCheckpointed,
    ContextCompacted,
    DiffBlock,
    DisplayBlock,
    InputDropped,
    InputQueued,
    NoticeAdded,
    PermissionResolved,
    PlanUpdated,
    Rewound,
    SessionEvent,
    SteeringApplied,
    SubagentEnded,
    SubagentStarted,
    TerminalBlock,
    TextPart,
    ThinkingPart,
    TitleSet,
    ToolCallRunning,
    ToolCallSettled,
    ToolCallStarted,
    TurnEnded,
    Usage,
    UserPrompted,
)
from hermes_acp.core.notice import Notice
from hermes_acp.protocol.convert import (
    compaction_summary,
    content_block,
    notice_update,
    plan_updates,
    session_message,
    subagent_announced,
    subagent_ended,
    tool_locations,
    usage_json,
    usage_update,
)
from hermes_acp.protocol.terminal_cards import terminal_events, v2_updates
from hermes_acp.turns.ports import (
    LiveCancelOpen,
    LiveCompaction,
    LiveCompactionChunk,
    LiveSubagentState,
    LiveTerminalOutput,
    LiveTextChunk,
    LiveThoughtChunk,
    LiveToolProgress,
    LiveUpdate,
    LiveUsage,
    PermissionChoice,
    PermissionQuestion,
)

__all__ = [
    "BASELINE",
    "UPDATE_KINDS",
    "Features",
    "TurnState",
    "available_commands",
    "config_options",
    "diff_content",
    "event_updates",
    "git_patch",
    "live_update",
    "notice",
    "permission_request",
    "session_status",
    "state_update",
    "thought_id",
    "tool_content",
    "turn_state",
]

Update = dict[str, Any]
"""One ``session/update``'s ``update`` object."""
TurnState = Literal["running", "idle", "requires_action"]
UPDATE_KINDS = frozenset(
    {
        "user_message_chunk",
        "user_message",
        "agent_message_chunk",
        "agent_message",
        "agent_thought_chunk",
        "agent_thought",
        "state_update",
        "tool_call_content_chunk",
        "tool_call_update",
        "terminal_update",
        "terminal_output_chunk",
        "plan_update",
        "plan_removed",
        "available_commands_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
        "notice",
        "compaction_update",
        "compaction_summary_chunk",
        "subagent_update",
        "session_message",
        "session_message_chunk",
    }
)
"""Every ``sessionUpdate`` kind of v2 (the unstable ones included). The schema lets any other string through as an
"other" variant, so a v1 kind (``tool_call``, ``plan``, ``current_mode_update``) would validate: the test harness
checks frames against this list as well."""
_ASK = {
    "execute": "Run this command?",
    "edit": "Apply this change?",
    "delete": "Delete this?",
    "move": "Move this?",
    "fetch": "Fetch this?",
    "read": "Read this?",
    "search": "Search here?",
    "switch_mode": "Switch the mode?",
}
"""A permission request's question (v2 asks for prompt copy apart from the tool call's title, which patches the
card)."""


@dataclass(frozen=True, slots=True)
class Features:
    """What one v2 connection is offered beyond the baseline: the cancel requests the server routes for it."""

    cancel_tool_calls: bool = False
    """``tool_call/cancel`` is answered: a call advertises ``capabilities.cancel`` while it may still run."""
    cancel_terminals: bool = False
    """``terminal/cancel`` is answered: an agent-owned terminal advertises it while its command runs."""


BASELINE = Features()
"""A connection offered nothing beyond the baseline (no cancel requests routed)."""


def thought_id(message_id: str) -> str:
    """The id of a response's reasoning, apart from its text (v1 sent both under the response's id)."""
    return f"{message_id}:thought"


def event_updates(event: SessionEvent, *, live: bool, features: Features = BASELINE) -> list[Update]:
    """The v2 updates of one stored event (see the module docstring for what ``live`` changes)."""
    match event:
        case UserPrompted() if event.sender_session_id is not None:
            return [session_message(event)]
        case UserPrompted() | SteeringApplied():
            return [_message("user_message", event.message_id, [content_block(b) for b in event.display])]
        case InputDropped() | Rewound():
            return [_message("agent_message", event.message_id, [_text(event.text)])]
        case NoticeAdded():
            return [_message("agent_message", event.message_id, [_text(event.text.rstrip("\n"))])]
        case AssistantMessageStored():
            thought = "".join(p.text for p in event.message.parts if isinstance(p, ThinkingPart) and p.text)
            text = "".join(p.text for p in event.message.parts if isinstance(p, TextPart))
            updates: list[Update] = []
            if thought:
                updates.append(_message("agent_thought", thought_id(event.message_id), [_text(thought)]))
            if text:
                updates.append(_message("agent_message", event.message_id, [_text(text)]))
            return updates
        case AssistantTextCheckpointed():
            if live:  # streamed already
                return []
            chunks = [("agent_thought_chunk", thought_id(event.message_id), event.thinking)]
            chunks.append(("agent_message_chunk", event.message_id, event.text))
            return [_chunk(kind, message_id, text) for kind, message_id, text in chunks if text]
        case ToolCallStarted():
            terminals = v2_updates(terminal_events(event.content), cancellable=live and features.cancel_terminals)
            call: Update = {
                "sessionUpdate": "tool_call_update",
                "toolCallId": event.tool_call_id,
                "name": event.name,
                "title": event.title,
                "kind": event.tool_kind,
                "status": "pending",
            }
            if event.raw_input is not None:
                call["rawInput"] = event.raw_input
            locations = tool_locations(event.locations)
            if locations:
                call["locations"] = locations
            content = tool_content(event.content)
            if content:
                call["content"] = content
            if live and features.cancel_tool_calls:
                call["capabilities"] = {"cancel": {}}
            return [*terminals, call]
        case ToolCallRunning():
            return [{"sessionUpdate": "tool_call_update", "toolCallId": event.tool_call_id, "status": "in_progress"}]
        case ToolCallSettled():
            ended = terminal_events(event.content, live=live)
            terminals = v2_updates(ended, replay=not live, cancellable=features.cancel_terminals)
            settled: Update = {
                "sessionUpdate": "tool_call_update",
                "toolCallId": event.tool_call_id,
                "status": "cancelled" if event.error_code == "cancelled" else event.status,
                "content": tool_content(event.content),
            }
            if event.raw_output is not None:
                settled["rawOutput"] = event.raw_output
            if features.cancel_tool_calls:
                settled["capabilities"] = None  # final: it takes no more cancels
            return [*terminals, settled]
        case PlanUpdated():
            return plan_updates(event, plans=True)
        case TitleSet():
            info: Update = {"sessionUpdate": "session_info_update", "title": event.title}
            if event.updated_at is not None:
                info["updatedAt"] = event.updated_at
            return [info]
        case ContextCompacted():
            return [
                {
                    "sessionUpdate": "compaction_update",
                    "compactionId": event.compaction_id,
                    "status": "completed",
                    "summary": [_text(compaction_summary(event))],
                }
            ]
        case TurnEnded():
            return [turn_state(event)] if live else []
        case SubagentStarted():
            return subagent_announced(event)
        case SubagentEnded():
            return [subagent_ended(event)]
        case PermissionResolved() | InputQueued():
            return []
        case _:
            assert_never(event)


def turn_state(event: TurnEnded) -> Update:
    """The idle ``state_update`` that ends a turn live: its stop reason, and what it used."""
    return state_update("idle", stop_reason=event.stop_reason, usage=event.usage)


def state_update(
    state: TurnState,
    *,
    stop_reason: str | None = None,
    error: dict[str, Any] | None = None,
    usage: Usage | None = None,
    hermes: dict[str, Any] | None = None,
) -> Update:
    """A ``state_update``: ``running`` when foreground work starts (and again after the user answered a question),
    ``requires_action`` while the turn waits on the user, ``idle`` when it ends, with why (``error``: the JSON-RPC
    error object of a turn that failed after its prompt was inserted, ``data`` included, reported as
    ``stopReason: "error"``), what it used, and ``hermes`` in ``_meta.hermes`` (the limit it stopped at, its cost:
    what a v1 prompt's answer carries). The one snapshot after a resume's replay is one of these too."""
    update: Update = {"sessionUpdate": "state_update", "state": state}
    if state != "idle":
        return update
    if error is not None:
        update["stopReason"] = "error"
        update["error"] = error
    elif stop_reason is not None:
        update["stopReason"] = stop_reason
    if usage is not None and usage != Usage():
        update["usage"] = usage_json(usage)
    if hermes:
        update["_meta"] = {"hermes": hermes}
    return update


def session_status(state: Update | None) -> dict[str, Any]:
    """The answer to ``session/status`` (unstable): ``open`` with the session's state (a ``state_update`` as this
    module builds it) for a session open in the host, ``saved`` for one only in the store."""
    if state is None:
        return {"status": "saved"}
    return {"status": "open", "state": {key: value for key, value in state.items() if key != "sessionUpdate"}}


def live_update(update: LiveUpdate, features: Features = BASELINE) -> Update | None:
    """The v2 update for a transient one; None for terminal output with nothing in it, and for a cancel the
    connection is not offered (``features``)."""
    match update:
        case LiveCancelOpen():
            call = update.target == "tool_call"
            if not (features.cancel_tool_calls if call else features.cancel_terminals):
                return None
            kind, key = ("tool_call_update", "toolCallId") if call else ("terminal_update", "terminalId")
            return {"sessionUpdate": kind, key: update.tool_call_id, "capabilities": {"cancel": {}}}
        case LiveTextChunk():
            return _chunk("agent_message_chunk", update.message_id, update.text)
        case LiveThoughtChunk():
            return _chunk("agent_thought_chunk", thought_id(update.message_id), update.text)
        case LiveToolProgress():
            progress: Update = {
                "sessionUpdate": "tool_call_update",
                "toolCallId": update.tool_call_id,
                "status": "in_progress",
            }
            if update.content is not None:
                progress["content"] = tool_content(update.content)
            return progress
        case LiveTerminalOutput():
            chunks = v2_updates(terminal_events(update))
            return chunks[0] if chunks else None
        case LiveCompaction():
            compaction: Update = {
                "sessionUpdate": "compaction_update",
                "compactionId": update.compaction_id,
                "status": update.status,
            }
            if update.error is not None:
                compaction["error"] = update.error
            return compaction
        case LiveCompactionChunk():
            return {
                "sessionUpdate": "compaction_summary_chunk",
                "compactionId": update.compaction_id,
                "content": _text(update.text),
            }
        case LiveUsage():
            return usage_update(update)
        case LiveSubagentState():
            return {
                "sessionUpdate": "subagent_update",
                "sessionId": update.session_id,
                "state": {"state": update.state},
            }
        case _:
            assert_never(update)


def notice(value: Notice) -> Update:
    """A ``notice`` (baseline in v2: every v2 client takes them, so a notice is never stored as text for one)."""
    return notice_update(value)


def tool_content(blocks: Sequence[DisplayBlock]) -> list[Update]:
    """Tool-call content in v2's shapes (see the module docstring)."""
    out: list[Update] = []
    for block in blocks:
        if isinstance(block, AgentTerminalBlock):
            if block.ran:
                out.append({"type": "terminal", "terminalId": block.terminal_id})
            if block.note:
                out.append({"type": "content", "content": _text(block.note)})
        elif isinstance(block, DiffBlock):
            out.append(diff_content(block))
        elif isinstance(block, TerminalBlock):
            continue  # a v1 client's terminal: no v2 client can show it
        else:
            out.append({"type": "content", "content": content_block(block)})
    return out


def diff_content(block: DiffBlock) -> Update:
    """A file change as v2's diff: the change (``add`` for a new file, else ``modify``) and a git patch of it."""
    operation = "add" if block.old_text is None else "modify"
    return {
        "type": "diff",
        "changes": [{"operation": operation, "path": block.path, "fileType": "text"}],
        "patch": {"format": "git_patch", "text": git_patch(block)},
    }


def git_patch(block: DiffBlock) -> str:
    """One ``diff --git`` section in Git's patch format, as v2 writes it: absolute paths without ``a/`` / ``b/``,
    ``/dev/null`` for the missing side of a new file, paths quoted as Git quotes them, three lines of context."""
    path = _git_quoted(block.path)
    old = (block.old_text or "").splitlines(keepends=True)
    new = block.new_text.splitlines(keepends=True)
    out = [f"diff --git {path} {path}\n"]
    if block.old_text is None:
        out.append("new file mode 100644\n")
    out += _unified(old, new, "/dev/null" if block.old_text is None else path, path)
    return "".join(out)


_CONTEXT = 3
_HUNK = re.compile(r"@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def _unified(old: list[str], new: list[str], before: str, after: str) -> list[str]:
    """``difflib.unified_diff`` of ``old`` and ``new``, run on the part between their common first and last lines
    (and its context): a tool's edit changes a few lines of a file, and difflib's matcher costs far more on the
    whole file (its repeated lines: blank ones, braces) than the unchanged ends are worth. The hunks' line numbers
    are moved back to the whole file's."""
    head = _common(old, new, lambda k: old[:k] == new[:k], min(len(old), len(new)))
    tail = _common(old, new, lambda k: old[len(old) - k :] == new[len(new) - k :], min(len(old), len(new)) - head)
    start = max(0, head - _CONTEXT)
    old_end, new_end = min(len(old), len(old) - tail + _CONTEXT), min(len(new), len(new) - tail + _CONTEXT)
    lines = list(difflib.unified_diff(old[start:old_end], new[start:new_end], before, after, n=_CONTEXT))
    if not lines:
        return []
    out = lines[:2]  # the ``---`` and ``+++`` lines
    for line in lines[2:]:
        moved = _HUNK.sub(_moved(start), line) if start and line.startswith("@@") else line
        out.append(moved if moved.endswith("\n") else moved + "\n\\ No newline at end of file\n")
    return out


def _common(old: list[str], new: list[str], same: Callable[[int], bool], most: int) -> int:
    """The largest ``k`` up to ``most`` for which ``same(k)`` holds (it holds up to some ``k`` and not past it),
    found by halving: list slices compare in C, a loop over lines would not."""
    low, high = 0, most
    while low < high:
        middle = (low + high + 1) // 2
        if same(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _moved(start: int) -> Callable[[re.Match[str]], str]:
    def move(hunk: re.Match[str]) -> str:
        return f"@@ -{int(hunk[1]) + start}{hunk[2] or ''} +{int(hunk[3]) + start}{hunk[4] or ''} @@"

    return move


_GIT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
}


def _git_quoted(path: str) -> str:
    """``path`` as Git writes it in a patch: as is, or in double quotes with C escapes and octal bytes when it holds
    a quote, a backslash, a control character or a byte past ASCII (Git's default ``core.quotePath``)."""
    if all(" " <= c < "\x7f" and c not in '"\\' for c in path):
        return path
    quoted = []
    for char in path:
        if char in _GIT_ESCAPES:
            quoted.append(_GIT_ESCAPES[char])
        elif " " <= char < "\x7f":
            quoted.append(char)
        else:
            quoted.extend(f"\\{byte:03o}" for byte in char.encode("utf-8", "surrogatepass"))
    return '"' + "".join(quoted) + '"'


def permission_request(
    session_id: str, question: PermissionQuestion, choices: Sequence[PermissionChoice]
) -> dict[str, Any]:
    """``session/request_permission`` params in v2: the question as prompt copy, the tool call it is about as the
    subject (its fields patch the card the client shows), the choices."""
    call: Update = {
        "toolCallId": question.tool_call_id,
        "title": question.title,
        "kind": question.kind,
        "status": "pending",
    }
    if question.raw_input is not None:
        call["rawInput"] = question.raw_input
    content = tool_content(question.content)
    if content:
        call["content"] = content
    locations = tool_locations(question.locations)
    if locations:
        call["locations"] = locations
    return {
        "sessionId": session_id,
        "title": _ASK.get(question.kind, "Allow this?"),
        "description": question.title,
        "subject": {"type": "tool_call", "toolCall": call},
        "options": [{"optionId": c.id, "name": c.name, "kind": c.kind} for c in choices],
    }


def config_options(options: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A session's config options (as ``protocol/session_view.py`` builds them) in v2's shape: the id is
    ``configId``. What v2 has in place of modes and models: the ``mode`` and ``model`` selects."""
    converted = []
    for option in options:
        fields = {key: value for key, value in option.items() if key != "id"}
        converted.append({"configId": option["id"], **fields})
    return converted


def available_commands(commands: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The slash commands (as ``session_view.available_commands`` lists them) with v2's discriminators."""
    listed = []
    for command in commands:
        entry = {"type": "command", **command}
        hint = command.get("input", {}).get("hint") if isinstance(command.get("input"), dict) else None
        if hint is not None:
            entry["input"] = {"type": "text", "hint": hint}
        listed.append(entry)
    return listed


def _message(kind: str, message_id: str, content: list[dict[str, Any]]) -> Update:
    return {"sessionUpdate": kind, "messageId": message_id, "content": content}


def _chunk(kind: str, message_id: str, text: str) -> Update:
    return {"sessionUpdate": kind, "messageId": message_id, "content": _text(text)}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}
