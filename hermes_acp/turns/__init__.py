"""The turn loop and its ports: one prompt turn from the user's message to the model's final answer.

The names below are loaded when first used (PEP 562), so that importing one light module of the package (the
projection, the recorder, the ports, which every session needs when it opens) does not import the loop with all its
phases, tools and providers; ``session/new`` does not wait for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {
    "loop": ("TurnDeps", "TurnResult", "TurnState", "run_turn"),
    "ports": (
        "LiveTextChunk",
        "LiveThoughtChunk",
        "LiveToolProgress",
        "LiveUpdate",
        "PermissionAnswer",
        "PermissionGate",
        "PermissionQuestion",
        "UpdateSink",
    ),
    "projection": ("SessionProjection", "transcript_events"),
    "recorder": ("Recorder",),
    "streaming": ("CHECKPOINTS", "CheckpointPolicy"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
