"""Hard blocks: desktop input refused in every mode, before any approval is asked (docs/computer-use.md §3).

Key combinations that lock the screen, log out, force-quit or force-delete are refused after normalising the
keys (split on ``+`` and ``-``, aliases such as ``command``/``⌘`` → ``cmd``, ``alt``/``⌥`` → ``option``,
``super``/``meta``/``windows`` → ``win``, ``del`` → ``delete``). Typed text that pipes a download into a shell,
``sudo rm -r``/``-f``, ``rm -rf /`` at the end, or a fork bomb is refused. This is not a command classifier;
it stops the most obvious destructive inputs a model could send through a keyboard.

It deliberately knows nothing about the driver or the approval flow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hermes_acp.errors import HardBlockedError

__all__ = ["check_keys", "check_text", "normalise_keys"]

_ALIASES = {
    "command": "cmd", "⌘": "cmd", "super": "win", "meta": "win", "windows": "win", "win": "win", "cmd": "cmd",
    "control": "ctrl", "ctl": "ctrl", "⌃": "ctrl", "ctrl": "ctrl",
    "alt": "option", "opt": "option", "⌥": "option", "option": "option",
    "⇧": "shift", "shift": "shift",
    "del": "delete", "delete": "delete", "⌦": "delete",
    "backspace": "backspace", "bksp": "backspace", "⌫": "backspace",
}  # fmt: skip
_BLOCKED_COMBOS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"cmd", "shift", "backspace"}), "empties the trash / force-deletes"),
    (frozenset({"cmd", "option", "backspace"}), "deletes immediately, bypassing the trash"),
    (frozenset({"cmd", "ctrl", "q"}), "locks the screen"),
    (frozenset({"cmd", "shift", "q"}), "logs out"),
    (frozenset({"cmd", "option", "shift", "q"}), "logs out without asking"),
    (frozenset({"win", "l"}), "locks the screen"),
    (frozenset({"ctrl", "option", "delete"}), "opens the secure attention / logout screen"),
    (frozenset({"ctrl", "option", "backspace"}), "kills the X server"),
    (frozenset({"option", "f4"}), "force-closes the window"),
    (frozenset({"cmd", "option", "escape"}), "opens force quit"),
)
_BLOCKED_TEXT: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(curl|wget)\b[^\n|]*\|\s*(sudo\s+)?(env\s+)?\w*sh\b", re.I), "pipes a download into a shell"),
    (re.compile(r"\bsudo\s+rm\s+(-\w*\s+)*-\w*[rf]", re.I), "runs sudo rm -r/-f"),
    (
        re.compile(r"\brm\s+(-\w+\s+)*-\w*[rf]\w*\s+(--no-preserve-root\s+)?/\*?\s*$", re.I),
        "deletes the root directory",
    ),
    (re.compile(r"(\w+|:)\s*\(\s*\)\s*\{\s*\1\s*\|\s*\1\s*&\s*\}\s*;?\s*\1"), "is a fork bomb"),
)


def normalise_keys(keys: Iterable[str]) -> frozenset[str]:
    """``["Command+Shift", "Q"]`` → ``{"cmd", "shift", "q"}`` (split on ``+`` and ``-``, aliases mapped)."""
    names: set[str] = set()
    for chunk in keys:
        for raw in re.split(r"[+\-\s]+", chunk.strip()):
            if raw:
                key = raw.casefold()
                names.add(_ALIASES.get(key, key))
    return frozenset(names)


def check_keys(keys: Iterable[str]) -> None:
    combo = normalise_keys(keys)
    for blocked, why in _BLOCKED_COMBOS:
        if blocked <= combo:
            shown = "+".join(sorted(blocked))
            raise HardBlockedError(f"the key combination {shown} {why}; it is blocked in every mode and was not sent")


def check_text(text: str) -> None:
    for pattern, why in _BLOCKED_TEXT:
        if pattern.search(text):
            raise HardBlockedError(f"the text to type {why}; it is blocked in every mode and was not typed")
