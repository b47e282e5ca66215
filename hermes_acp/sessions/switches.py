"""The session's on/off switches: automatic compaction, the network for sandboxed commands, and lifting the session's
budget (offered only while ``[budget]`` caps the session).

Each is a boolean config option for a client that advertised ``session.configOptions.boolean``; its value is kept
in the session record's ``meta`` (under the switch's id), so it survives a reload and travels with a fork, like the
thinking effort. Unset, a switch has the configuration's value: automatic compaction is on, and the network follows
``[sandbox] network``. Off, automatic compaction compacts neither near the window nor when the provider refuses a
request as too long (``/compact`` still does); the network switch is what a session's sandbox gets (``read_only``
has no network whatever it says). Pure; the session stores and applies, the protocol shows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from hermes_acp.config import Settings
from hermes_acp.turns.budget import LIFT_OPTION_NAME

__all__ = ["AUTO_COMPACTION", "LIFT_SESSION_BUDGET", "SANDBOX_NETWORK", "SWITCHES", "Switch", "switch_value"]

AUTO_COMPACTION = "auto_compaction"
SANDBOX_NETWORK = "sandbox_network"
LIFT_SESSION_BUDGET = "lift_session_budget"


@dataclass(frozen=True, slots=True)
class Switch:
    id: str
    """The config option's id and the record's ``meta`` key."""
    name: str
    description: str
    default: Callable[[Settings], bool]
    offered: Callable[[Settings], bool] = lambda settings: True
    """Whether a session with these settings offers the switch at all."""


SWITCHES: Final[tuple[Switch, ...]] = (
    Switch(
        AUTO_COMPACTION,
        "Automatic compaction",
        "Summarise older turns when the conversation nears the context window (/compact works either way).",
        lambda settings: True,
    ),
    Switch(
        SANDBOX_NETWORK,
        "Network for commands",
        "Sandboxed commands may reach the network (never in read_only mode).",
        lambda settings: settings.sandbox.network,
    ),
    Switch(
        LIFT_SESSION_BUDGET,
        LIFT_OPTION_NAME,
        "Lift this session's [budget] caps (tokens and USD) for the rest of the session; each prompt's still apply.",
        lambda settings: False,
        offered=lambda settings: settings.budget.session_tokens is not None or settings.budget.session_usd is not None,
    ),
)


def switch_value(switch: Switch, meta: Mapping[str, Any], settings: Settings) -> bool:
    """The switch's value in a session whose record holds ``meta``."""
    stored = meta.get(switch.id)
    return stored if isinstance(stored, bool) else switch.default(settings)
