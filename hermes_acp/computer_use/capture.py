"""Capture: bind the sticky target, read the window (or the whole screen), and shape what model and editor get.

A window capture lists the windows, chooses one (``target.choose_window``: explicit, by app, or frontmost; never
a silent fallback), reads it with ``get_window_state`` in the form this driver accepts (``tree_format``,
``include_screenshot``/``include_accessibility_tree`` per mode), parses the elements, and then:

* ``som``: numbered element boxes are drawn on the screenshot; ``vision``: pixels only; ``ax``: elements only, no
  image;
* the screenshot (with its boxes) is fitted once to the gate's native limits (Pillow, one pass off the loop); that
  image goes through the session's image gate (native pixels / auxiliary description / text only), which passes
  it on as it is when it is native, and it is the editor's copy whatever the route. The coordinates the model may
  send are pixels of that image, scaled by the gate when it shrank it further (``Geometry``);
* the editor gets the image as an ``ImageBlock``; the driver's screenshot goes to ``<cache>/images/``; at most 100
  elements are inlined and the full list spills to ``<cache>/computer_use/elements_<uuid>.json`` when anything was
  cut (both in the one image cache, ``hermes_acp.images.cache``).

``app="screen"`` reads the whole display (``get_desktop_state``): pixels and the window list, no elements and no
target. Before anything is read, the driver is asked whether the system lets it (macOS: Screen Recording for
pixels, Accessibility for elements; ``permissions``). On macOS the window's bounds and the elements' frames are
points and the screenshot is points × ``screenshot_scale`` (reported to the model); the geometry maps through the
window's bounds either way, and a window on another Space (``current_space_id``) is said to be one. It deliberately
knows nothing about approval or input actions.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio.to_thread

from hermes_acp.core import DisplayBlock, ImageBlock, ImagePart, TextBlock, TextPart
from hermes_acp.images.cache import save_image, save_json
from hermes_acp.images.codec import Fitted, ImageDecodeError, Mark, mark_and_fit, measure
from hermes_acp.images.gate import NATIVE_MAX_EDGE, SessionImageGate

from .driver import DriverClient
from .elements import (
    Box,
    Element,
    Geometry,
    Seen,
    bounds_scale,
    element_rows,
    element_summary,
    full_rows,
    parse_elements,
)
from .outputs import CaptureOutput, ImageInfo
from .permissions import needs_for_capture
from .results import ComputerUseRefusal, DriverReply
from .surface import DriverSurface
from .target import DESKTOP, SCREEN, Target, WindowRow, choose_window, window_rows

__all__ = ["OTHER_SPACE_NOTE", "CaptureResult", "Capturer"]

MIN_IMAGE_EDGE = 8
OTHER_SPACE_NOTE = (
    "this window is on another Space (macOS desktop), not the one on screen: its screenshot may be blank or "
    "stale, and foreground input would switch Spaces. Ask the user to switch to it, or capture a window on this "
    "Space."
)


@dataclass(slots=True)
class CaptureResult:
    target: Target | None
    seen: Seen | None
    output: CaptureOutput
    parts: list[TextPart | ImagePart] = field(default_factory=list)
    """Extra parts after the payload: the image, or its description."""
    display: list[DisplayBlock] = field(default_factory=list)
    editor_image: ImageBlock | None = None


@dataclass(slots=True)
class _Shot:
    data: bytes
    media_type: str
    width: int
    height: int


def _shot(reply: DriverReply) -> _Shot | None:
    if not reply.images:
        return None
    media_type, encoded = reply.images[0]
    data = base64.b64decode(encoded)
    try:
        width, height = measure(data)
    except ImageDecodeError:
        return None
    if min(width, height) < MIN_IMAGE_EDGE:
        return None
    return _Shot(data, media_type, width, height)


def _window_box(structured: dict[str, Any], row: WindowRow | None) -> Box | None:
    raw = structured.get("window_bounds")
    if isinstance(raw, dict):
        try:
            return (float(raw["x"]), float(raw["y"]), float(raw["width"]), float(raw["height"]))
        except (KeyError, TypeError, ValueError):
            pass
    return row.bounds if row is not None else None


class Capturer:
    def __init__(self, driver: DriverClient, gate: SessionImageGate, cache_dir: Path):
        self._driver = driver
        self._gate = gate
        self._cache_dir = cache_dir

    async def windows(self, **filters: Any) -> list[WindowRow]:
        return await self._windows(await self._driver.ensure(), **filters)

    async def _windows(self, surface: DriverSurface, **filters: Any) -> list[WindowRow]:
        reply = await self._driver.call("list_windows", surface.with_only("list_windows", filters))
        return window_rows(reply.structured)

    async def bind(self, *, app: str | None, pid: int | None, window_id: int | None) -> tuple[Target, WindowRow]:
        """Choose the target window (no capture). The driver's own ``app`` filter (bundle ids) is a second try."""
        surface = await self._driver.ensure()
        rows = await self._windows(surface)
        try:
            row = choose_window(rows, app=app, pid=pid, window_id=window_id)
        except ComputerUseRefusal:
            if app is None or app.casefold() == DESKTOP or not surface.accepts("list_windows", "app"):
                raise
            filtered = await self._windows(surface, app=app)
            if not filtered:
                raise
            row = choose_window(filtered)
        return Target(row.pid, row.window_id, row.app, row.title, self._driver.generation), row

    async def capture(
        self,
        mode: str,
        *,
        app: str | None = None,
        pid: int | None = None,
        window_id: int | None = None,
        known: Target | None = None,
    ) -> CaptureResult:
        if app is not None and app.casefold() == SCREEN and known is None:
            await self._driver.require(needs_for_capture(SCREEN))
            return await self._screen()
        await self._driver.require(needs_for_capture(mode))
        row: WindowRow | None = None
        if known is None:
            target, row = await self.bind(app=app, pid=pid, window_id=window_id)
        else:
            target = known
        return await self._window(target, row, mode)

    async def _window(self, target: Target, row: WindowRow | None, mode: str) -> CaptureResult:
        surface = await self._driver.ensure()
        args: dict[str, Any] = {"pid": target.pid, "window_id": target.window_id}
        if mode != "vision" and surface.accepts("get_window_state", "tree_format"):
            args["tree_format"] = "elements"
        if mode == "ax" and surface.accepts("get_window_state", "include_screenshot"):
            args["include_screenshot"] = False
        if mode == "vision" and surface.accepts("get_window_state", "include_accessibility_tree"):
            args["include_accessibility_tree"] = False
        reply = await self._driver.call("get_window_state", surface.with_only("get_window_state", args))
        data = reply.structured
        target = Target(
            pid=target.pid,
            window_id=target.window_id,
            app=str(data.get("app_name") or target.app),
            title=str(data.get("window_title") or target.title),
            generation=self._driver.generation,
        )
        elements = [] if mode == "vision" else parse_elements(data, reply.texts)
        shot = None if mode == "ax" else _shot(reply)
        window = _window_box(data, row)
        geometry = Geometry(window=window)
        output = CaptureOutput(mode=mode, target=target.payload())
        if row is not None and row.other_space:
            output.note = OTHER_SPACE_NOTE
        parts: list[TextPart | ImagePart] = []
        display: list[DisplayBlock] = [TextBlock(text=f"Captured {target.app} — {target.title} ({mode})")]
        editor_image: ImageBlock | None = None
        fitted = await self._fit(shot, self._marks(shot, elements, window) if mode == "som" else [])
        if shot is not None and fitted is not None:
            image = ImagePart(media_type=fitted.media_type, data=base64.b64encode(fitted.data).decode("ascii"),
                              label=f"screenshot of {target.app} — {target.title}")  # fmt: skip
            gated = await self._gate.admit(
                [image],
                purpose=f"a screenshot of the window {target.title!r} of {target.app}",
                fallback=f"[The screenshot of {target.app} is not shown to this model; "
                + ("use the element list above.]" if elements else "capture in ax or som mode for its elements.]"),
                hint=element_summary(elements) if elements else None,
            )
            scale = gated.scales[0] if gated.scales else None
            model_w = round(fitted.width * scale) if scale else fitted.width
            model_h = round(fitted.height * scale) if scale else fitted.height
            geometry = Geometry(shot.width, shot.height, model_w, model_h, window)
            parts.extend(gated.parts)
            editor_image = ImageBlock(media_type=image.media_type, data=image.data)
            display.append(editor_image)
            path = await save_image(self._cache_dir, "screenshot", shot.data, shot.media_type)
            output.image = ImageInfo(width=model_w, height=model_h, route=gated.route)
            output.screenshot_path = str(path)
        elif mode != "ax":
            output.image = None
            output.note = "the driver returned no usable screenshot; act by element or capture again"
        scale = data.get("screenshot_scale")
        if isinstance(scale, int | float) and not isinstance(scale, bool) and scale > 0:
            output.screenshot_scale = float(scale)
        if mode != "vision":
            await self._describe_elements(output, elements, geometry, data)
        snapshot = data.get("snapshot_id")
        seen = Seen({e.index: e for e in elements}, geometry, snapshot if isinstance(snapshot, str) else None)
        return CaptureResult(target, seen, output, parts, display, editor_image)

    async def _describe_elements(
        self, output: CaptureOutput, elements: list[Element], geometry: Geometry, data: dict[str, Any]
    ) -> None:
        rows, cut = element_rows(elements, geometry)
        output.elements = rows
        output.elements_total = len(elements)
        driver_cut = data.get("truncated") is True
        if cut:
            document = {"target": output.target, "elements": full_rows(elements, geometry)}
            path = await save_json(self._cache_dir, "elements", document)
            output.elements_file = str(path)
            output.elements_note = (
                f"{len(rows)} of {len(elements)} elements inline (labels cut at 120 characters); read_file "
                f"{path} for " + ("every element the driver returned" if driver_cut else "the full list")
            )
        if driver_cut:
            output.driver_truncated = True
        scale = bounds_scale(geometry, elements)
        if scale is not None:
            units = "points (macOS)" if "screenshot_scale" in data else "native window units"
            output.bounds_scale = scale
            output.bounds_note = (
                f"element bounds are {units}, not image pixels: divide them by {scale} for pixels of the image "
                "(HiDPI or a resized image); prefer acting by element"
            )
        if data.get("degraded") is True:
            output.degraded = True
            output.degraded_reason = str(data.get("degraded_reason") or "")
            output.next = "The accessibility tree is empty or untrusted: act by coordinate off this image."

    @staticmethod
    def _marks(shot: _Shot | None, elements: list[Element], window: Box | None) -> list[Mark]:
        """The set-of-marks boxes in screenshot pixels (the driver draws none)."""
        if shot is None:
            return []
        geometry = Geometry(shot_w=shot.width, shot_h=shot.height, window=window)
        return [(e.index, box) for e in elements if (box := geometry.shot_box(e)) is not None]

    async def _fit(self, shot: _Shot | None, marks: list[Mark]) -> Fitted | None:
        """``shot`` with ``marks`` drawn, fitted to the gate's native limits in one pass (None: unreadable)."""
        if shot is None:
            return None
        target = self._gate.embed_target_bytes
        try:
            return await anyio.to_thread.run_sync(
                lambda: mark_and_fit(shot.data, shot.media_type, marks, max_edge=NATIVE_MAX_EDGE, target_bytes=target)
            )
        except ImageDecodeError:
            return None

    async def _screen(self) -> CaptureResult:
        surface = await self._driver.ensure()
        if not surface.has("get_desktop_state"):
            raise ComputerUseRefusal("this driver cannot capture the whole screen", code="unsupported_action")
        reply = await self._driver.call("get_desktop_state", {})
        shot = _shot(reply)
        output = CaptureOutput(
            mode="vision",
            app=SCREEN,
            windows=[row.payload() for row in window_rows(reply.structured)][:30],
            note="Whole display: pixels only, no elements and no input target. Capture an app or window "
            "(app, or pid/window_id from this list) before any input.",
        )
        parts: list[TextPart | ImagePart] = []
        display: list[DisplayBlock] = [TextBlock(text="Captured the whole screen")]
        editor_image = None
        fitted = await self._fit(shot, [])
        if shot is not None and fitted is not None:
            image = ImagePart(media_type=fitted.media_type, data=base64.b64encode(fitted.data).decode("ascii"),
                              label="screenshot of the whole display")  # fmt: skip
            gated = await self._gate.admit(
                [image],
                purpose="a screenshot of the whole display",
                fallback="[The screenshot of the display is not shown to this model; use the window list.]",
            )
            parts.extend(gated.parts)
            editor_image = ImageBlock(media_type=image.media_type, data=image.data)
            display.append(editor_image)
            saved = await save_image(self._cache_dir, "screenshot", shot.data, shot.media_type)
            output.screenshot_path = str(saved)
        return CaptureResult(None, None, output, parts, display, editor_image)
