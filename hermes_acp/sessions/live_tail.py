"""The live tail of a session's running turn: what was streamed live and is not in the log yet, kept so that a
connection that attaches mid-turn is shown it after the stored history (``sessions.audience``'s catch-up).

It follows the live updates and the stored events of one session and forgets what a checkpoint, a stored message,
a settled call or the turn's end put in the log. It sends nothing and knows nothing of connections.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from hermes_acp.core import (
    AssistantMessageStored,
    AssistantTextCheckpointed,
    SessionEvent,
    ToolCallSettled,
    TurnEnded,
)
from hermes_acp.turns.ports import LiveTerminalOutput, LiveTextChunk, LiveThoughtChunk, LiveToolProgress, LiveUpdate

__all__ = ["TERMINAL_TAIL_CHARS", "LiveTail"]

TERMINAL_TAIL_CHARS = 32 * 1024
"""How much of a running command's terminal a connection that catches up is shown (its end)."""


@dataclass
class LiveTail:
    """What was streamed live and is not yet in the log: text and reasoning since each message's last checkpoint,
    each running call's latest live output, and what each running command's terminal showed so far (its end, past
    ``TERMINAL_TAIL_CHARS``). A connection that catches up gets it after the history."""

    chunks: list[LiveTextChunk | LiveThoughtChunk] = field(default_factory=list)
    progress: dict[str, LiveToolProgress | LiveTerminalOutput] = field(default_factory=dict)

    def live(self, update: LiveUpdate) -> None:
        if isinstance(update, LiveTextChunk | LiveThoughtChunk):
            self.chunks.append(update)
        elif isinstance(update, LiveToolProgress):
            self.progress[update.tool_call_id] = update
        elif isinstance(update, LiveTerminalOutput):
            before = self.progress.get(update.tool_call_id)
            shown = before.data if isinstance(before, LiveTerminalOutput) else ""
            self.progress[update.tool_call_id] = replace(update, data=_last(shown + update.data))

    def stored(self, event: SessionEvent) -> None:
        if isinstance(event, AssistantTextCheckpointed):
            self._drop(event.message_id, LiveTextChunk, len(event.text))
            self._drop(event.message_id, LiveThoughtChunk, len(event.thinking))
        elif isinstance(event, AssistantMessageStored):
            self.chunks = [c for c in self.chunks if c.message_id != event.message_id]
        elif isinstance(event, ToolCallSettled):
            self.progress.pop(event.tool_call_id, None)
        elif isinstance(event, TurnEnded):
            self.chunks.clear()
            self.progress.clear()

    def _drop(self, message_id: str, kind: type[LiveTextChunk | LiveThoughtChunk], chars: int) -> None:
        """A checkpoint stores the oldest unsaved pieces of a message: the first ``chars`` characters of it."""
        kept: list[LiveTextChunk | LiveThoughtChunk] = []
        for chunk in self.chunks:
            if chars > 0 and chunk.message_id == message_id and isinstance(chunk, kind):
                chars -= len(chunk.text)
                continue
            kept.append(chunk)
        self.chunks = kept

    def snapshot(self) -> list[LiveUpdate]:
        return [*self.chunks, *self.progress.values()]


_EARLIER = "[… earlier output not shown …]\n"


def _last(text: str) -> str:
    if len(text) <= TERMINAL_TAIL_CHARS:
        return text
    return _EARLIER + text[len(text) - TERMINAL_TAIL_CHARS + len(_EARLIER) :]
