"""Target binding: which window input goes to, chosen explicitly and kept until the next capture (sticky target).

``choose_window`` picks one ``list_windows`` row for a capture or ``focus_app``: an explicit ``window_id`` (and
``pid``), a ``pid`` (its frontmost window), an app name (app name, then window title; exact before substring), the
``"desktop"`` shell, or — with nothing named — the frontmost ordinary window. When nothing matches it raises
``no_matching_window`` naming what exists; it never falls back to some other window, because a misdirected click
is worse than none. ``mismatch`` is the guard for ``app=`` on input actions: it is not a target, only an
assertion about the sticky one.

It deliberately knows nothing about MCP, images or the driver's element model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .results import ComputerUseRefusal

__all__ = ["DESKTOP", "SCREEN", "Target", "WindowRow", "choose_window", "mismatch", "window_rows"]

SCREEN = "screen"
DESKTOP = "desktop"
_DESKTOP_SHELLS = frozenset(
    {"desktop", "xfdesktop", "nautilus-desktop", "pcmanfm", "pcmanfm-qt", "caja", "nemo-desktop", "plasmashell",
     "gnome-shell", "ding", "program manager", "progman", "explorer", "finder"}
)  # fmt: skip
_DESKTOP_TITLES = frozenset({"desktop", "program manager", "@!0,0;bdhf", "x-nautilus-desktop"})


@dataclass(frozen=True, slots=True)
class WindowRow:
    window_id: int
    pid: int
    app: str
    title: str
    bounds: tuple[float, float, float, float] | None
    z_index: int | None
    on_screen: bool
    other_space: bool = False
    """macOS: the window is on another Space than the one on screen (``current_space_id``)."""

    def describe(self) -> str:
        where = ", on another Space" if self.other_space else ""
        return f"{self.app or '?'} — {self.title or '(untitled)'} (pid {self.pid}, window_id {self.window_id}{where})"

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {"window_id": self.window_id, "pid": self.pid, "app": self.app, "title": self.title}
        if self.bounds is not None:
            out["bounds"] = [round(v) for v in self.bounds]
        if self.z_index is not None:
            out["z_index"] = self.z_index
        if not self.on_screen:
            out["on_screen"] = False
        if self.other_space:
            out["on_current_space"] = False
        return out

    @property
    def is_desktop_shell(self) -> bool:
        return self.app.casefold() in _DESKTOP_SHELLS or self.title.casefold() in _DESKTOP_TITLES


@dataclass(frozen=True, slots=True)
class Target:
    """The sticky target: where input goes until the next capture or focus_app."""

    pid: int
    window_id: int
    app: str
    title: str
    generation: int
    """The driver connection it was bound on; a rebuilt connection voids it."""

    def payload(self) -> dict[str, Any]:
        return {"app": self.app, "title": self.title, "pid": self.pid, "window_id": self.window_id}


def _bounds(record: Mapping[str, Any]) -> tuple[float, float, float, float] | None:
    raw = record.get("bounds")
    source = raw if isinstance(raw, Mapping) else record
    try:
        return (float(source["x"]), float(source["y"]), float(source["width"]), float(source["height"]))
    except (KeyError, TypeError, ValueError):
        return None


def _on_current_space(record: Mapping[str, Any], current: Any) -> bool | None:
    """macOS: whether the window is on the Space on screen (its ``on_current_space``, else its ``space_ids`` against
    the listing's ``current_space_id``); None where the driver says nothing of Spaces."""
    flag = record.get("on_current_space")
    if isinstance(flag, bool):
        return flag
    spaces = record.get("space_ids")
    if isinstance(current, int) and isinstance(spaces, list) and spaces:
        return current in spaces
    return None


def window_rows(structured: Mapping[str, Any]) -> list[WindowRow]:
    """Usable ``list_windows`` rows: positive pid and window_id (X11 windows without a pid are skipped). A window on
    another macOS Space counts as off screen: no automatic choice picks it over one on screen."""
    rows = []
    current = structured.get("current_space_id")
    for record in structured.get("windows") or []:
        if not isinstance(record, Mapping):
            continue
        pid, window_id = record.get("pid"), record.get("window_id")
        if not isinstance(pid, int) or not isinstance(window_id, int) or pid <= 0 or window_id <= 0:
            continue
        z_index = record.get("z_index")
        other_space = _on_current_space(record, current) is False
        rows.append(
            WindowRow(
                window_id=window_id,
                pid=pid,
                app=str(record.get("app_name") or ""),
                title=str(record.get("title") or ""),
                bounds=_bounds(record),
                z_index=z_index if isinstance(z_index, int) else None,
                on_screen=record.get("is_on_screen") is not False
                and record.get("minimized") is not True
                and not other_space,
                other_space=other_space,
            )
        )
    return rows


def _frontmost(rows: Sequence[WindowRow]) -> WindowRow | None:
    ranked = [row for row in rows if row.z_index is not None]
    if ranked:
        return max(ranked, key=lambda row: row.z_index or 0)
    return rows[0] if len(rows) == 1 else None


def _by_name(rows: Sequence[WindowRow], wanted: str) -> list[WindowRow]:
    needle = wanted.casefold()
    for matches in (
        [r for r in rows if r.app.casefold() == needle],
        [r for r in rows if r.title.casefold() == needle],
        [r for r in rows if needle in r.app.casefold()],
        [r for r in rows if needle in r.title.casefold()],
    ):
        if matches:
            return matches
    return []


def _none_matches(what: str, rows: Sequence[WindowRow]) -> ComputerUseRefusal:
    listing = "; ".join(row.describe() for row in rows[:12]) or "no windows at all"
    return ComputerUseRefusal(
        f"no window matches {what}; nothing was captured and no other window was chosen. Windows: {listing}. "
        "Capture with one of these app names, or with pid/window_id from list_windows.",
        code="no_matching_window",
    )


def choose_window(
    rows: Sequence[WindowRow], *, app: str | None = None, pid: int | None = None, window_id: int | None = None
) -> WindowRow:
    visible = [row for row in rows if row.on_screen] or list(rows)
    if window_id is not None:
        found = [r for r in rows if r.window_id == window_id and (pid is None or r.pid == pid)]
        if not found:
            raise _none_matches(f"window_id {window_id}" + (f" of pid {pid}" if pid is not None else ""), rows)
        return found[0]
    if pid is not None:
        of_pid = [r for r in visible if r.pid == pid] or [r for r in rows if r.pid == pid]
        chosen = _frontmost(of_pid) or (of_pid[0] if of_pid else None)
        if chosen is None:
            raise _none_matches(f"pid {pid}", rows)
        return chosen
    if app is not None and app.casefold() == DESKTOP:
        shells = [r for r in rows if r.is_desktop_shell]
        if not shells:
            raise _none_matches("the desktop shell (app='desktop')", rows)
        return _frontmost(shells) or shells[0]
    if app is not None:
        matches = _by_name(visible, app) or _by_name(rows, app)
        if not matches:
            raise _none_matches(f"app {app!r}", rows)
        return _frontmost(matches) or matches[0]
    ordinary = [r for r in visible if not r.is_desktop_shell]
    chosen = _frontmost(ordinary)
    if chosen is None:
        raise ComputerUseRefusal(
            "cannot tell which window is frontmost (the driver reports no stacking order); name the app or pass "
            "window_id from list_windows.",
            code="no_matching_window",
        )
    return chosen


def mismatch(target: Target, asserted: str) -> ComputerUseRefusal | None:
    """``input_target_mismatch`` when ``asserted`` names neither the sticky app nor its window (case-insensitive
    substring either way); None when they agree or the sticky app is unknown (the check fails open)."""
    needle = asserted.casefold().strip()
    names = [n.casefold() for n in (target.app, target.title) if n]
    if not needle or not names or any(needle in n or n in needle for n in names):
        return None
    return ComputerUseRefusal(
        f"input would go to the current target {target.app or target.title!r} (window {target.title!r}, pid "
        f"{target.pid}), not {asserted!r}; app= on an input action is a check, not a target. Call "
        f"capture(app={asserted!r}) or focus_app first.",
        code="input_target_mismatch",
    )
