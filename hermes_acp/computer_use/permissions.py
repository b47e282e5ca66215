"""The desktop permissions the driver holds where the system grants them per app: macOS's Accessibility (to read a
window's elements and deliver input) and Screen Recording (to take screenshots), both given to the driver's app
(CuaDriver) in System Settings (docs/cua-driver.md §5).

A driver that lists ``check_permissions`` reports them (the macOS shape: ``accessibility``, ``screen_recording``;
the Linux one says other things, which mean nothing here). ``DesktopAccess`` reads that report; ``require`` raises
``desktop_permission_missing`` for what a call needs and the report says is not granted, with the setting that
grants it, before anything is sent to the desktop. Unknown (no report, no such key) never blocks: the driver's own
answers speak then.

What each action needs: a capture in ``som`` mode both, ``vision`` (and the whole screen) Screen Recording, ``ax``
Accessibility; input, ``verify_state`` and raising a window Accessibility; listings nothing.

It deliberately knows nothing about MCP or when the report is read (``driver.DriverClient.require``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .results import ComputerUseRefusal

__all__ = ["NEEDS", "DesktopAccess", "Need", "needs_for_capture"]

Need = Literal["accessibility", "screen_recording"]
NEEDS: tuple[Need, ...] = ("accessibility", "screen_recording")
_WHY: dict[Need, tuple[str, str, str]] = {
    "accessibility": (
        "Accessibility",
        "to read a window's elements and to deliver input",
        "Privacy & Security → Accessibility",
    ),
    "screen_recording": (
        "Screen Recording",
        "to take screenshots",
        "Privacy & Security → Screen & System Audio Recording",
    ),
}


def needs_for_capture(mode: str) -> tuple[Need, ...]:
    """What a capture in ``mode`` (``som``, ``vision``, ``ax``; ``screen`` for the whole display) needs."""
    if mode == "ax":
        return ("accessibility",)
    if mode in ("vision", "screen"):
        return ("screen_recording",)
    return NEEDS


@dataclass(frozen=True, slots=True)
class DesktopAccess:
    """What the driver's ``check_permissions`` said (None: it did not say)."""

    accessibility: bool | None = None
    screen_recording: bool | None = None

    @classmethod
    def from_report(cls, report: Mapping[str, Any]) -> DesktopAccess:
        def flag(key: str) -> bool | None:
            value = report.get(key)
            return value if isinstance(value, bool) else None

        return cls(flag("accessibility"), flag("screen_recording"))

    def missing(self, needs: tuple[Need, ...]) -> list[Need]:
        return [need for need in needs if getattr(self, need) is False]

    def require(self, needs: tuple[Need, ...]) -> None:
        """``desktop_permission_missing`` naming what is not granted and where to grant it, if anything is."""
        missing = self.missing(needs)
        if not missing:
            return
        names = " and ".join(_WHY[need][0] for need in missing)
        reasons = "; ".join(f"{_WHY[need][0]} {_WHY[need][1]}" for need in missing)
        places = " and ".join(_WHY[need][2] for need in missing)
        plural = "s" if len(missing) > 1 else ""
        message = (
            f"macOS has not given the desktop driver the {names} permission{plural} it needs ({reasons}); nothing "
            f"was sent to the desktop. The user grants it in System Settings → {places}, to CuaDriver (the app the "
            "driver runs as), then restarts CuaDriver. Tell the user; do not retry this until they have."
        )
        if missing == ["screen_recording"]:
            message += " A capture in ax mode (elements, no screenshot) works without it."
        raise ComputerUseRefusal(
            message, code="desktop_permission_missing", details={"missing_permissions": list(missing)}
        )
