"""Compaction: the model's history made to fit its context window again, without losing what the work needs.

``compact`` runs one compaction and returns the ``ContextCompacted`` event to store (the caller stores it, in one
write, once it returned: a compaction stopped half-way leaves nothing behind). It

1. plans (``plan``): the most recent turns stay verbatim, within ``KEEP_SHARE`` of the room the window leaves
   beside the system prompt and tool schemas; the older part is replaced. The history is split only before a
   user or assistant message, so a tool call is never separated from its result. When even the current turn is
   too large (a huge tool result), tool results of the kept part are cut to a stub that says what was cut, oldest
   first, before the split moves into the current turn;
2. has the older part summarised by a model (``[agent] compaction_model``, or the session's) with a prompt that
   keeps the goal, decisions, files touched, open tasks, facts the user gave and the tool results that still
   matter (``SUMMARY_SYSTEM_PROMPT``). The summary streams to the editor as it is written. The older part goes to
   it as a plain transcript: images as their labels, each tool result clipped, the oldest messages left out if
   even that does not fit the summarising model;
3. falls back, when the summary request fails, to dropping the older part (the model is told, and so is the user);
   the event says so, so a reload is compacted the same way.

The next request is then the same system prompt and tool schemas, the summary, and the kept messages (the image
window still applies there). Nothing here stores or emits a finished compaction: the event is rendered from the log.
Talks to the provider seam and the recorder's live updates only.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import aclosing
from dataclasses import dataclass

import structlog

from hermes_acp.core import (
    AssistantMessage,
    CompactionTrigger,
    ContextCompacted,
    ImagePart,
    Message,
    ServerToolCallPart,
    TextPart,
    ToolCallPart,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from hermes_acp.core.ids import new_message_id
from hermes_acp.errors import ProviderError, ProviderStreamError
from hermes_acp.providers.base import ProviderRequest, ResponseDone, TextDelta
from hermes_acp.tools.base import AnyTool

from .context import CHARS_PER_TOKEN, MESSAGE_TOKENS, measure, message_tokens, text_tokens, window_tokens
from .meter import Meter
from .ports import LiveCompaction, LiveCompactionChunk
from .projection import SUMMARY_FOOTER, SUMMARY_HEADER, compacted_history
from .state import TurnDeps

__all__ = [
    "KEEP_SHARE",
    "OVERFLOW_SHRINK",
    "SUMMARY_SYSTEM_PROMPT",
    "Plan",
    "compact",
    "log_compaction",
    "plan",
    "stub_text",
    "transcript",
]

_log = structlog.get_logger("hermes_acp.turns")
KEEP_SHARE = 0.4
"""Of the room beside the system prompt and tool schemas (up to the threshold): what the kept recent messages may
take."""
SUMMARY_SHARE = 0.15
"""Of that room: the longest summary asked for (within ``SUMMARY_MIN_TOKENS``..``SUMMARY_MAX_TOKENS``)."""
SUMMARY_MIN_TOKENS = 256
SUMMARY_MAX_TOKENS = 2_048
OVERFLOW_SHRINK = 0.7
"""After a provider refused a request as too long, the compaction aims this much lower than that request."""
MIN_GAIN_SHARE = 0.05
"""An automatic compaction that would free less than this share of the window is not worth a model call."""
RESULT_CHARS = 2_000
"""Of each tool result, what the summarising model reads."""
ARGUMENT_CHARS = 500
STUB_HEAD_CHARS = 400
"""Of a tool result cut to a stub, how much the stub keeps."""
_PROMPT_TOKENS = 600
"""The summary request's own prompt, generously."""

SUMMARY_SYSTEM_PROMPT = """You write the memory of a coding agent. Its conversation with a user no longer fits \
the model's context window, so the older part is replaced by your summary: the agent goes on from your summary and \
the most recent messages alone, and cannot look up anything you leave out.

Write the summary in plain text, under these headings, each short and concrete:
1. Goal: what the user wants, in their words, and how far it is done.
2. Decisions: what was decided or agreed, and why.
3. Files: every file read, created, changed or deleted, and what changed in it.
4. Open tasks: what is left to do, and what was about to happen next.
5. User facts: names, paths, preferences, constraints and other facts the user gave.
6. Tool results that still matter: findings, errors, command output, values and exact strings the work depends on.

Keep exact names, paths, identifiers, numbers and error messages. Leave out greetings and whatever was superseded. \
Do not address the user and do not invent anything."""


@dataclass(frozen=True, slots=True)
class Plan:
    replaced: int
    """How many messages, from the start of the history, are replaced (by the summary or a note)."""
    stubs: dict[str, str]
    """Tool results of the kept part cut to a stub, by tool-call id."""
    summary_tokens: int
    """The longest summary to ask for."""


def plan(
    history: Sequence[Message],
    sent: Sequence[Message],
    *,
    fixed: int,
    used: int,
    window: int,
    threshold: float,
    trigger: CompactionTrigger,
) -> Plan | None:
    """What to replace and what to cut; None when a compaction would not help.

    ``sent`` is ``history`` as a request carries it (same length: old images as placeholders), for sizes; ``fixed``
    the system prompt and tool schemas, ``used`` what the request takes now, both in tokens. ``manual`` replaces the
    whole history (the user asked, between turns); the others keep the most recent part, as the module says."""
    limit = window * threshold
    if trigger == "overflow":
        limit = min(limit, used) * OVERFLOW_SHRINK
    room = max(0.0, limit - fixed)
    summary_tokens = int(min(SUMMARY_MAX_TOKENS, max(SUMMARY_MIN_TOKENS, room * SUMMARY_SHARE)))
    count = len(history)
    if trigger == "manual":
        return Plan(replaced=count, stubs={}, summary_tokens=summary_tokens) if count else None
    budget = room * KEEP_SHARE
    sizes = [sum(message_tokens(m)) for m in sent]
    suffix = [0] * (count + 1)
    for index in range(count - 1, -1, -1):
        suffix[index] = suffix[index + 1] + sizes[index]
    turns = [i for i in range(1, count) if isinstance(history[i], UserMessage)]
    boundaries = [i for i in range(1, count) if not isinstance(history[i], ToolResultMessage)]
    split = next((i for i in turns if suffix[i] <= budget), None)
    stubs: dict[str, str] = {}
    if split is None:
        split = turns[-1] if turns else 0  # the current turn, whole
        kept = suffix[split]
        for index in range(split, count):  # oldest first, until the kept part fits
            if kept <= budget:
                break
            kept -= _cut(history[index], sizes[index], stubs)
        if kept > budget:  # even stubbed, the current turn does not fit: summarise the start of it too
            later = [i for i in boundaries if i > split]
            split = next((i for i in later if _stubbed_suffix(history, sizes, stubs, i) <= budget), None) or (
                later[-1] if later else split
            )
            stubs = {key: text for key, text in stubs.items() if _at_or_after(history, key, split)}
    if split == 0 and not stubs:
        return None
    kept_tokens = _stubbed_suffix(history, sizes, stubs, split)
    after = fixed + kept_tokens + (summary_tokens + text_tokens(SUMMARY_HEADER + SUMMARY_FOOTER) if split else 0)
    if trigger == "threshold" and used - after < window * MIN_GAIN_SHARE:
        return None
    return Plan(replaced=split, stubs=stubs, summary_tokens=summary_tokens)


def _cut(message: Message, size: int, stubs: dict[str, str]) -> int:
    """Cut ``message`` to a stub if it is a tool result larger than one; the tokens that frees."""
    if not isinstance(message, ToolResultMessage):
        return 0
    stub = stub_text(message)
    freed = size - (MESSAGE_TOKENS + text_tokens(stub))
    if freed <= 0:
        return 0
    stubs[message.tool_call_id] = stub
    return freed


def _stubbed_suffix(history: Sequence[Message], sizes: Sequence[int], stubs: dict[str, str], start: int) -> int:
    total = 0
    for index in range(start, len(history)):
        message = history[index]
        if isinstance(message, ToolResultMessage) and message.tool_call_id in stubs:
            total += MESSAGE_TOKENS + text_tokens(stubs[message.tool_call_id])
        else:
            total += sizes[index]
    return total


def _at_or_after(history: Sequence[Message], tool_call_id: str, start: int) -> bool:
    return any(isinstance(m, ToolResultMessage) and m.tool_call_id == tool_call_id for m in history[start:])


def stub_text(result: ToolResultMessage) -> str:
    """What the model reads in place of a tool result cut to save context: what it was, and how it began."""
    text = "".join(p.text for p in result.parts if isinstance(p, TextPart))
    images = sum(isinstance(p, ImagePart) for p in result.parts)
    size = f"{len(text):,} characters" + (f" and {images} image{'s' * (images > 1)}" if images else "")
    head = text[:STUB_HEAD_CHARS]
    note = (
        f"[This {result.name} result was cut to fit the context window: it had {size}."
        + (f" Its first {len(head):,} characters follow." if head else "")
        + " Run the tool again, narrower, if more of it is needed.]"
    )
    return f"{note}\n{head}" if head else note


def transcript(messages: Sequence[Message], *, max_chars: int) -> str:
    """``messages`` as plain text for the summarising model: images as labels, tool results clipped, and the oldest
    messages left out (an earlier summary at the start is kept) when the whole is longer than ``max_chars``."""
    blocks = [_render(m) for m in messages]
    keep_first = bool(blocks) and blocks[0].startswith("User: " + SUMMARY_HEADER[:40])
    total = sum(len(b) + 2 for b in blocks)
    start = 1 if keep_first else 0
    dropped = 0
    while total > max_chars and start + dropped < len(blocks) - 1:
        total -= len(blocks[start + dropped]) + 2
        dropped += 1
    if dropped:
        note = f"[{dropped} earlier messages are left out here: they did not fit this request.]"
        blocks = [*blocks[:start], note, *blocks[start + dropped :]]
    text = "\n\n".join(blocks)
    return text if len(text) <= max_chars else text[: max(0, max_chars - 20)] + "\n[… cut here]"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}[… {len(text) - limit:,} more characters]"


def _render(message: Message) -> str:
    if isinstance(message, UserMessage):
        parts = [p.text if isinstance(p, TextPart) else f"[image: {p.label or 'attached'}]" for p in message.parts]
        return "User: " + "".join(parts)
    if isinstance(message, AssistantMessage):
        lines = [f"Assistant: {message.text}"] if message.text else []
        for part in message.parts:
            if isinstance(part, ToolCallPart | ServerToolCallPart):
                lines.append(f"Assistant called {part.name} {_clip(part.arguments, ARGUMENT_CHARS)}")
        return "\n".join(lines) or "Assistant: (no text)"
    texts = [p.text if isinstance(p, TextPart) else f"[image: {p.label or 'image'}]" for p in message.parts]
    status = " (failed)" if message.is_error else ""
    return f"Result of {message.name}{status}: {_clip(''.join(texts), RESULT_CHARS)}"


async def compact(
    deps: TurnDeps,
    *,
    turn_id: str,
    compaction_id: str,
    trigger: CompactionTrigger,
    tools: Sequence[AnyTool],
    instructions: str | None = None,
) -> ContextCompacted | None:
    """One compaction of the session's history; the event to store, or None when it would not help (nothing is
    sent then). The editor sees it start and the summary stream; a stop or failure after that is the caller's to
    show (``LiveCompaction``). Raises cancellation; a failed summary request falls back to dropping."""
    meter = Meter.of(deps)
    history = list(meter.projection.history)
    request = meter.request(tools)
    now = meter.measure(request)
    window = meter.window
    planned = plan(
        history,
        request.messages,
        fixed=now.parts.fixed,
        used=now.used,
        window=window,
        threshold=deps.compaction.threshold,
        trigger=trigger,
    )
    if planned is None:
        return None
    await deps.recorder.live(LiveCompaction(compaction_id, "in_progress"))
    model = deps.compaction.model or deps.model
    summary, usage, error = "", None, None
    if planned.replaced:
        try:
            summary, usage = await _summarise(deps, history[: planned.replaced], planned, compaction_id, instructions)
        except ProviderError as exc:
            error = str(exc)
        if not summary and error is None:
            error = "the summarising model answered with no text"
    event = ContextCompacted(
        turn_id=turn_id,
        compaction_id=compaction_id,
        message_id=new_message_id(),
        trigger=trigger,
        method="stubs" if not planned.replaced else ("dropped" if error is not None else "summary"),
        replaced=planned.replaced,
        summary=summary if error is None else "",
        stubs=planned.stubs,
        model_id=model.id if planned.replaced else None,
        usage=usage,
        tokens_before=now.used,
        instructions=instructions or None,
        error=error,
    )
    after = meter.request(tools, compacted_history(history, event))
    return event.model_copy(update={"tokens_after": measure(after, None).used})


def log_compaction(event: ContextCompacted, *, session_id: str, started: float) -> None:
    """One log line per stored compaction: what it did, and how long it took from ``started`` (``perf_counter``),
    the summary request included."""
    _log.info(
        "history compacted",
        session_id=session_id,
        compaction_id=event.compaction_id,
        trigger=event.trigger,
        method=event.method,
        replaced=event.replaced,
        stubs=len(event.stubs),
        tokens_before=event.tokens_before,
        tokens_after=event.tokens_after,
        ms=round((time.perf_counter() - started) * 1000, 2),
    )


async def _summarise(
    deps: TurnDeps, older: Sequence[Message], planned: Plan, compaction_id: str, instructions: str | None
) -> tuple[str, Usage | None]:
    """The summary of ``older``, streamed to the editor as it is written; raises ``ProviderError``."""
    model = deps.compaction.model or deps.model
    provider = deps.compaction.provider or deps.provider
    room = window_tokens(model) - planned.summary_tokens - _PROMPT_TOKENS - text_tokens(instructions or "")
    prompt = (
        "Summarise this conversation between a user and a coding agent (an earlier summary in it is part of what to"
        " summarise):\n\n<conversation>\n"
        + transcript(older, max_chars=max(room, 0) * CHARS_PER_TOKEN)
        + "\n</conversation>"
    )
    if instructions:
        prompt += f"\n\nThe user asks the summary to focus on: {instructions}"
    request = ProviderRequest(
        model=model.model,
        system=SUMMARY_SYSTEM_PROMPT,
        messages=[UserMessage(parts=[TextPart(text=prompt)])],
        max_output_tokens=planned.summary_tokens,
    )
    done: ResponseDone | None = None
    async with aclosing(provider.stream(request)) as events:
        async for event in events:
            if isinstance(event, TextDelta) and event.text:
                await deps.recorder.live(LiveCompactionChunk(compaction_id, event.text))
            elif isinstance(event, ResponseDone):
                done = event
    if done is None:
        raise ProviderStreamError("the summary stream ended without a final event", provider=provider.provider_id)
    return done.message.text.strip(), done.usage
