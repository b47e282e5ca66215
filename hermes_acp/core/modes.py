"""The session modes (docs/architecture.md §1.2) and what each one means, as data.

The mode decides what needs the user's permission; the decision itself is made in ``hermes_acp.tools.policy``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeGuard, get_args

__all__ = ["DEFAULT_MODE", "MODES", "READ_ONLY_MODES", "ModeId", "ModeInfo", "is_mode_id"]

ModeId = Literal["default", "accept_edits", "plan", "dont_ask", "read_only"]
DEFAULT_MODE: Final[ModeId] = "default"


@dataclass(frozen=True, slots=True)
class ModeInfo:
    id: ModeId
    name: str
    description: str


MODES: Final[tuple[ModeInfo, ...]] = (
    ModeInfo("default", "Default", "Ask before edits, commands and desktop input."),
    ModeInfo(
        "accept_edits",
        "Accept Edits",
        "Edits inside the session's directories are allowed; sensitive paths, commands and desktop input ask.",
    ),
    ModeInfo(
        "plan",
        "Plan",
        'Investigate with read-only tools and write a plan; no edits, no commands. The agent asks "Ready to code?"'
        " before it switches to a mode that can change things.",
    ),
    ModeInfo(
        "dont_ask",
        "Don't Ask",
        "No questions inside the session's directories (commands run in the sandbox); sensitive paths and anything"
        " outside still ask; hard-blocked commands are refused.",
    ),
    ModeInfo("read_only", "Read Only", "No edits, no commands; computer_use may only observe."),
)


READ_ONLY_MODES: Final[frozenset[ModeId]] = frozenset({"plan", "read_only"})
"""The modes in which nothing may change: only read-only tools are offered, anything mutating is refused."""


def is_mode_id(value: str) -> TypeGuard[ModeId]:
    return value in get_args(ModeId)
