"""Slash commands: the set and how a prompt names one, the built-in ones, prompt files, skills, the project's
instruction files, ``/review``'s changes, ``/status``'s text and plan mode's hand-off.

The commands reach the session through ``CommandView`` (``view.py``), a small protocol the session implements;
nothing here imports ``hermes_acp.sessions`` (it sits above this package). The names below load on first use
(PEP 562), so a module that needs one part (``commands.skills``) does not pull in the others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .command_set import Ask, Command, CommandSet, Invocation, Reply
    from .view import CommandView

__all__ = ["Ask", "Command", "CommandSet", "CommandView", "Invocation", "Reply"]

_HOMES = {
    "Ask": ".command_set",
    "Command": ".command_set",
    "CommandSet": ".command_set",
    "CommandView": ".view",
    "Invocation": ".command_set",
    "Reply": ".command_set",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
