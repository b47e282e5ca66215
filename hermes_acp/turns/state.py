"""The wiring of one turn (``TurnDeps``, immutable) apart from what the turn accumulates (``TurnState``).

The loop, the streaming step and the tool-call step all read ``TurnDeps``; only the loop changes ``TurnState``.
Where the turn is (its phase) is neither: it is the value the loop passes from step to step
(``hermes_acp.turns.phases``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hermes_acp.config import Effort
from hermes_acp.core import StopReason, Usage
from hermes_acp.errors import TurnFailure
from hermes_acp.providers.base import ModelProvider
from hermes_acp.providers.catalog import CatalogModel
from hermes_acp.tools.context import ToolEnvironment

from .budget import Budget
from .cancels import CallCancels
from .ports import PermissionGate, SteeringInbox, ToolSurface
from .recorder import Recorder
from .streaming import CHECKPOINTS, CheckpointPolicy

__all__ = ["MAX_PARALLEL_READS", "CompactionPolicy", "TurnDeps", "TurnResult", "TurnState"]

MAX_PARALLEL_READS = 4
"""How many calls that only read run at the same time, unless the session says more (``TurnDeps.parallel_calls``)."""


@dataclass(frozen=True, kw_only=True)
class CompactionPolicy:
    """When the history is compacted (``[agent] compaction_threshold``) and who writes the summary."""

    threshold: float = 0.8
    """Of the window (``context_window - max_output_tokens``): a request that would take more compacts first."""
    model: CatalogModel | None = None
    """The model that writes summaries (``[agent] compaction_model``); None: the session's."""
    provider: ModelProvider | None = None
    """``model``'s provider; None with ``model`` None."""
    automatic: bool = True
    """Compact on the way (near the threshold, or when the provider refuses a request as too long); off, only
    ``/compact`` does."""


@dataclass(frozen=True, kw_only=True)
class TurnDeps:
    """Immutable wiring of one turn."""

    model: CatalogModel
    provider: ModelProvider
    system_prompt: str
    surface: ToolSurface
    """The session's mode and the tools each request offers, derived from its state, never remembered."""
    recorder: Recorder
    gate: PermissionGate
    env: ToolEnvironment
    """What the turn's tool calls share (the session's id, workspace, cache, image gate, sandbox, subagents, the
    editor whose prompt the turn serves); prompt images pass its image gate too."""
    max_requests: int
    permission_timeout_s: float
    checkpoints: CheckpointPolicy | None = CHECKPOINTS
    """How often streamed text is checkpointed into the log; None stores it only when the response ends."""
    compaction: CompactionPolicy = field(default_factory=CompactionPolicy)
    models: Callable[[str], CatalogModel | None] | None = None
    """The configured models by id, for the prices of every model the session used (its cost); None: only
    ``model``'s prices are known."""
    effort: Effort | None = None
    """The thinking effort every request of the turn asks for (None: none is sent)."""
    steering: SteeringInbox | None = None
    """Where steering messages for this turn wait (None: the turn takes none)."""
    budget: Budget | None = None
    """What the session (its root's, for a subagent) may still spend: charged after every model call, checked before
    every request (None: no caps)."""
    parallel_calls: int = MAX_PARALLEL_READS
    """How many calls that only read (and delegations) of one response run at the same time."""
    sender_session_id: str | None = None
    """The session whose task this turn runs (a subagent's parent; its prompt is stored as coming from it)."""
    cancels: CallCancels | None = None
    """Where a client stops one call (``tool_call/cancel``); None: calls stop only with their turn."""
    rules: Recorder | None = None
    """Whose "always" rules the permission questions follow, and whose log also keeps the "always" answers (a
    subagent's: its parent's, so an "always allow" given in a child holds for the parent's session); None: this
    session's own (``recorder``)."""


@dataclass(kw_only=True)
class TurnState:
    """What one turn accumulates."""

    turn_id: str
    requests: int = 0
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True, slots=True)
class TurnResult:
    stop_reason: StopReason
    usage: Usage
    failure: TurnFailure | None = None
    """What ended the turn before a finished answer: the provider failing after its retries, or a limit (the
    transcript's notice says so too, for a failure and a budget)."""
