"""Input actions → the call the connected driver accepts (click, double/right click, drag, scroll, type, key,
set_value), decided by the driver's live input schemas (docs/cua-driver.md §4.1, §9).

``plan_input`` resolves the model's ``element`` through the latest capture (``element_token`` where the schema
has it, else ``element_index`` + ``snapshot_id``, else a bare ``element_index``, else the element's centre in
pixels), maps ``coordinate`` from the model's image to the driver's screenshot pixels, picks ``hotkey`` or
``press_key`` with ``modifiers`` for key combinations, and adds ``delivery_mode`` only for foreground input —
refusing ``foreground_unsupported`` when the tool's schema has no ``delivery_mode`` rather than silently
delivering in the background. ``describe`` says in words what a call will do (for titles and approvals).

It deliberately knows nothing about MCP transport, approval or images.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hermes_acp.errors import ErrorCode

from .elements import Element, Seen
from .results import ComputerUseRefusal
from .schema import ComputerUseInput
from .surface import DriverSurface
from .target import Target

__all__ = ["PlannedCall", "describe", "plan_input"]

DEFAULT_SCROLL = 3


@dataclass(frozen=True, slots=True)
class PlannedCall:
    tool: str
    args: dict[str, Any]
    used_element: bool
    foreground: bool


def _refuse(message: str, code: ErrorCode) -> ComputerUseRefusal:
    return ComputerUseRefusal(message, code=code)


def _element(seen: Seen | None, index: int) -> Element:
    if seen is None or not seen.elements:
        raise _refuse(
            f"there is no element {index}: the latest capture of this target has no element list; capture in som "
            "or ax mode first",
            "unknown_element",
        )
    element = seen.elements.get(index)
    if element is None:
        known = sorted(seen.elements)
        raise _refuse(
            f"element {index} is not in the latest capture (indices {known[0]}..{known[-1]}); capture again",
            "unknown_element",
        )
    return element


def _point(seen: Seen | None, coordinate: list[float]) -> tuple[float, float]:
    if seen is None or not seen.geometry.has_image:
        raise _refuse(
            "coordinates are pixels of the latest capture's image, and this target has no captured image; capture "
            "it in som or vision mode first",
            "no_screenshot",
        )
    return seen.geometry.to_driver(coordinate[0], coordinate[1])


def _element_args(surface: DriverSurface, tool: str, element: Element, seen: Seen) -> dict[str, Any]:
    form = surface.element_form(tool)
    if form == "token" and element.token:
        return {"element_token": element.token}
    if form == "index_snapshot" and seen.snapshot_id:
        return {"element_index": element.index, "snapshot_id": seen.snapshot_id}
    if form == "index":
        return {"element_index": element.index}
    centre = seen.geometry.center(element)
    if centre is None or not surface.accepts(tool, "x"):
        raise _refuse(f"{tool}: this driver cannot address element {element.index} (no token, index or bounds)",
                      "element_unaddressable")  # fmt: skip
    return {"x": centre[0], "y": centre[1]}


def _locate(
    surface: DriverSurface, tool: str, seen: Seen | None, *, element: int | None, coordinate: list[float] | None
) -> tuple[dict[str, Any], bool]:
    """Where ``tool`` acts: the element's address, else the coordinate in driver pixels, else nowhere (focus)."""
    if element is not None:
        found = _element(seen, element)
        assert seen is not None
        return _element_args(surface, tool, found, seen), True
    if coordinate is not None:
        x, y = _point(seen, coordinate)
        if not surface.accepts(tool, "x"):
            raise _refuse(f"{tool}: this driver takes no coordinates for this action", "unsupported_argument")
        return {"x": x, "y": y}, False
    return {}, False


def _centre_or_point(seen: Seen | None, element: int | None, coordinate: list[float] | None) -> tuple[float, float]:
    if element is not None:
        found = _element(seen, element)
        assert seen is not None
        centre = seen.geometry.center(found)
        if centre is None:
            raise _refuse(f"element {element} has no known bounds; drag by coordinate instead", "element_unaddressable")
        return centre
    assert coordinate is not None
    return _point(seen, coordinate)


def _click_tool(surface: DriverSurface, p: ComputerUseInput) -> tuple[str, dict[str, Any]]:
    button = "right" if p.action == "right_click" else (p.button or "left")
    if p.action == "double_click":
        if surface.has("double_click"):
            return "double_click", {}
        if surface.accepts("click", "count"):
            return "click", {"count": 2}
        raise _refuse("this driver has no double click", "unsupported_action")
    if button == "right" and surface.has("right_click"):
        return "right_click", {}
    if button == "left":
        return "click", {}
    if surface.accepts("click", "button"):
        return "click", {"button": button}
    raise _refuse(f"this driver has no {button} click", "unsupported_action")


def _keys(surface: DriverSurface, p: ComputerUseInput) -> tuple[str, dict[str, Any]]:
    assert p.keys is not None
    parts = [k.strip().lower() for k in p.keys.split("+") if k.strip()] or [p.keys]
    parts = [*(m.lower() for m in p.modifiers or []), *parts]
    if len(parts) == 1:
        if not surface.has("press_key"):
            raise _refuse("this driver has no press_key", "unsupported_action")
        return "press_key", {"key": parts[0]}
    if surface.has("hotkey"):
        return "hotkey", {"keys": parts}
    if surface.accepts("press_key", "modifiers"):
        return "press_key", {"key": parts[-1], "modifiers": parts[:-1]}
    raise _refuse(f"this driver cannot send the combination {'+'.join(parts)}", "unsupported_action")


def plan_input(p: ComputerUseInput, *, target: Target, seen: Seen | None, surface: DriverSurface) -> PlannedCall:
    """The driver call for input action ``p`` on ``target``; raises ``ComputerUseRefusal`` when it cannot go."""
    args: dict[str, Any]
    if p.action in ("click", "double_click", "right_click"):
        tool, args = _click_tool(surface, p)
        if p.modifiers:
            name = "modifier" if surface.accepts(tool, "modifier") else "modifiers"
            if not surface.accepts(tool, name):
                raise _refuse(f"{tool}: this driver takes no modifiers for clicks", "unsupported_argument")
            args[name] = [m.lower() for m in p.modifiers]
    elif p.action == "drag":
        tool = "drag"
        (fx, fy) = _centre_or_point(seen, p.from_element, p.from_coordinate)
        (tx, ty) = _centre_or_point(seen, p.to_element, p.to_coordinate)
        args = {"from_x": fx, "from_y": fy, "to_x": tx, "to_y": ty}
    elif p.action == "scroll":
        tool, args = "scroll", {"direction": p.direction, "amount": p.amount or DEFAULT_SCROLL}
    elif p.action == "type":
        tool, args = "type_text", {"text": p.text}
    elif p.action == "key":
        tool, args = _keys(surface, p)
    elif p.action == "set_value":
        tool, args = "set_value", {"value": p.value}
    else:
        raise _refuse(f"{p.action} is not an input action", "unsupported_action")
    used_element = False
    if p.action != "drag":  # a key goes to an element when one is given, never to a coordinate
        coordinate = None if p.action == "key" else p.coordinate
        located, used_element = _locate(surface, tool, seen, element=p.element, coordinate=coordinate)
        args.update(located)
    if not surface.has(tool):
        raise _refuse(f"this driver has no {tool} tool", "unsupported_action")
    for name, value in (("pid", target.pid), ("window_id", target.window_id)):
        if surface.accepts(tool, name):
            args[name] = value
    if p.delivery_mode == "foreground":
        if not surface.accepts(tool, "delivery_mode"):
            raise _refuse(
                f"foreground delivery was asked for, but this driver's {tool} has no delivery_mode; the action was "
                "not sent (it is never silently sent in the background instead)",
                "foreground_unsupported",
            )
        args["delivery_mode"] = "foreground"
    return PlannedCall(tool=tool, args=args, used_element=used_element, foreground=p.delivery_mode == "foreground")


def _what(seen: Seen | None, index: int | None, coordinate: list[float] | None) -> str:
    if index is not None:
        element = seen.elements.get(index) if seen is not None else None
        if element is None:
            return f"element [{index}]"
        label = f' "{element.label[:60]}"' if element.label else ""
        return f"element [{index}]{label} ({element.role})"
    if coordinate is not None:
        return f"point ({coordinate[0]:g}, {coordinate[1]:g})"
    return "the focused control"


def describe(p: ComputerUseInput, target: Target | None, seen: Seen | None) -> str:
    """What the call will do, in words: action, element or text, target app and window, delivery."""
    where = f" in {target.app or '?'} (window {target.title!r})" if target is not None else ""
    mode = " [foreground]" if p.foreground else ""
    a = p.action
    if a == "capture":
        return f"Capture {p.app or 'the frontmost window'} ({p.mode or 'som'})"
    if a in ("click", "double_click", "right_click"):
        verb = {"click": "Click", "double_click": "Double-click", "right_click": "Right-click"}[a]
        return f"{verb} {_what(seen, p.element, p.coordinate)}{where}{mode}"
    if a == "drag":
        start, end = _what(seen, p.from_element, p.from_coordinate), _what(seen, p.to_element, p.to_coordinate)
        return f"Drag from {start} to {end}{where}{mode}"
    if a == "scroll":
        over = _what(seen, p.element, p.coordinate)
        return f"Scroll {p.direction} {p.amount or DEFAULT_SCROLL} over {over}{where}{mode}"
    if a == "type":
        shown = p.text if p.text is not None and len(p.text) <= 200 else f"{(p.text or '')[:200]}…"
        return f"Type {shown!r} into {_what(seen, p.element, None)}{where}{mode}"
    if a == "key":
        return f"Press {p.keys}{where}{mode}"
    if a == "set_value":
        return f"Set {_what(seen, p.element, None)} to {p.value!r}{where}{mode}"
    if a == "focus_app":
        raised = " and bring it to the front" if p.raise_window else ""
        return f"Focus {p.app or p.window_id or p.pid}{raised}"
    if a == "wait":
        return f"Wait {p.seconds or 1:g} s"
    if a == "verify_state":
        return f"Verify {len(p.expect or [])} condition(s){where}"
    return {"list_apps": "List apps", "list_windows": "List windows"}.get(a, a)
