"""Subagents: the children a session's ``delegate`` calls run, as sessions of their own (docs/architecture.md §6.8).

``runner.py`` runs them (``SubagentRunner``, a session's ``Subagents`` port), ``relay.py`` carries a child's traffic
to its parent's connections, ``replay.py`` shows a child's log in its parent's replay, ``lineage.py`` is where a
session stands among delegations and the narrow views parent, child and session manager are seen through
(``view.py``: the connections). Nothing here imports ``hermes_acp.sessions`` (it sits above this package). The names
below load on first use (PEP 562).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .lineage import ChildOpener, ChildView, Lineage, ParentView, SubagentLink
    from .relay import ParentRelay
    from .replay import ChildReplay
    from .runner import SubagentRunner

__all__ = [
    "ChildOpener",
    "ChildReplay",
    "ChildView",
    "Lineage",
    "ParentRelay",
    "ParentView",
    "SubagentLink",
    "SubagentRunner",
]

_HOMES = {
    "ChildOpener": ".lineage",
    "ChildReplay": ".replay",
    "ChildView": ".lineage",
    "Lineage": ".lineage",
    "ParentRelay": ".relay",
    "ParentView": ".lineage",
    "SubagentLink": ".lineage",
    "SubagentRunner": ".runner",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
