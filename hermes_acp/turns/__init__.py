"""The turn loop and its ports: one prompt turn from the user's message to the model's final answer."""

from .loop import TurnDeps, TurnResult, TurnState, run_turn
from .ports import (
    LiveTextChunk,
    LiveThoughtChunk,
    LiveToolProgress,
    LiveUpdate,
    PermissionAnswer,
    PermissionGate,
    PermissionQuestion,
    UpdateSink,
)
from .projection import SessionProjection, transcript_events
from .recorder import Recorder
from .streaming import CHECKPOINTS, CheckpointPolicy

__all__ = [
    "CHECKPOINTS",
    "CheckpointPolicy",
    "LiveTextChunk",
    "LiveThoughtChunk",
    "LiveToolProgress",
    "LiveUpdate",
    "PermissionAnswer",
    "PermissionGate",
    "PermissionQuestion",
    "Recorder",
    "SessionProjection",
    "TurnDeps",
    "TurnResult",
    "TurnState",
    "UpdateSink",
    "run_turn",
    "transcript_events",
]
