"""The phases of one turn: where the loop is, and what a stop at that point leaves open.

A turn is a sequence of phases; each step of the loop (``hermes_acp.turns.loop``) runs one phase and returns the
next, or ``Ended``. A phase value is never changed, only replaced, so "where was the turn when it stopped" is always
exactly one value, and ``settle`` in the loop matches on it:

- ``Converting``: the user's prompt is being converted (attachments read, perhaps asked about), or taken as the
  text a slash command gives the model. It is not stored yet; a stop stores it for the transcript only.
- ``BetweenRequests``: everything so far is stored; the steering messages that arrived are applied (a safe point:
  nothing streams, no call waits for its result), then the next model request is built here (or the turn ends).
- ``Compacting``: the next request would not fit (it passes the compaction threshold, or the provider refused it
  as too long), so the history is compacted first (``hermes_acp.turns.compaction``). The compaction is stored in
  one write when it finished, so a stop leaves the old history and nothing open in the log; the editor, shown the
  compaction in progress, is told it was cancelled or failed.
- ``Streaming``: a model response streams. Its text so far is in ``partial`` (checkpointed at intervals); a stop
  stores it as an interrupted message.
- ``RunningTool``: the announced calls of a stored response run in order, from ``next``, one batch per step:
  consecutive calls that only read run together, any other call alone. The log says which ones run
  (``ToolCallRunning``); a stop fails those and marks the rest "not run".

Pure data; the only mutable piece is the streamed text buffer, which the streaming step appends to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from hermes_acp.core import DisplayBlock, StopReason
from hermes_acp.core.ids import new_message_id
from hermes_acp.errors import TurnFailure
from hermes_acp.providers.base import ModelStopReason, ProviderRequest
from hermes_acp.tools.base import AnyTool

from .streaming import PartialResponse
from .tool_calls import PreparedCall

__all__ = ["BetweenRequests", "Compacting", "Converting", "Ended", "Phase", "RunningTool", "Streaming"]


@dataclass(frozen=True, slots=True)
class Converting:
    display: list[DisplayBlock]
    """The prompt as the editor showed it."""
    notices: tuple[str, ...] = ()
    """Shown with the prompt (e.g. an MCP server that failed to start)."""
    notes: tuple[str, ...] = ()
    """For the model, after the prompt's text (e.g. the MCP servers that wait for a sign-in); never shown."""
    prompt: str | None = None
    """What the model gets instead of ``display`` (a slash command's text); ``display`` is still what is shown."""
    input_id: str | None = None
    """The queued input this prompt waited as (``InputQueued``), resolved by its ``UserPrompted``."""
    message_id: str = field(default_factory=new_message_id)
    """The id its ``UserPrompted`` is stored with (the session may choose it, to tell the client)."""


@dataclass(frozen=True, slots=True)
class BetweenRequests:
    pass


@dataclass(frozen=True, slots=True)
class Compacting:
    tools: tuple[AnyTool, ...]
    """The tool surface of the request the compaction makes room for."""
    trigger: Literal["threshold", "overflow"]
    compaction_id: str


@dataclass(frozen=True, slots=True)
class Streaming:
    request: ProviderRequest
    tools: tuple[AnyTool, ...]
    """The tool surface the request offered: the calls of the response are checked against it."""
    partial: PartialResponse
    retry: bool = False
    """This request is the retry after a compaction for a context-length error: another one ends the turn."""


@dataclass(frozen=True, slots=True)
class RunningTool:
    calls: tuple[PreparedCall, ...]
    next: int
    """Index of the call to run next: the first of the next batch."""
    model_stop: ModelStopReason
    """Why the response stopped: after ``max_tokens`` or ``refusal`` the turn ends once its calls are settled."""


@dataclass(frozen=True, slots=True)
class Ended:
    stop_reason: StopReason
    limit: TurnFailure | None = None
    """The limit that ended the turn (``max_turn_requests``, a ``[budget]`` cap); None for the model's own stop."""


Phase = Converting | BetweenRequests | Compacting | Streaming | RunningTool
