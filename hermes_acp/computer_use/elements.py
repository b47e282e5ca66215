"""Elements of one capture and the geometry between the model's image, the driver's screenshot and the window.

``parse_elements`` reads ``structuredContent.elements[]`` (index, token, role, label, value, screen ``frame``,
0.37 ``screenshot_frame``) and falls back to the markdown rows (``- [N] role "label"``) of drivers that only
send text. ``Geometry`` maps the model's coordinates (pixels of the image the model was given) to the driver's
screenshot pixels, which the driver itself maps through its HiDPI scale and downscale ratio (docs/cua-driver.md §5).
``element_rows`` is what the model reads: at most ``MAX_INLINE`` elements, labels cut to ``MAX_LABEL`` with
``label_truncated``, bounds in image pixels when the driver gave screenshot frames, else in native window units
with a ``bounds_scale`` hint when those disagree with the image by more than 5 % (docs/computer-use.md §6).

It deliberately knows nothing about MCP, files or which route the image takes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_INLINE",
    "MAX_LABEL",
    "Box",
    "Element",
    "Geometry",
    "Seen",
    "bounds_scale",
    "element_rows",
    "element_summary",
    "full_rows",
    "parse_elements",
]

MAX_INLINE = 100
MAX_LABEL = 120
SUMMARY_LINES = 40
SUMMARY_LABEL = 60
SCALE_TOLERANCE = 0.05
Box = tuple[float, float, float, float]
_ROW = re.compile(r'^\s*- \[(\d+)\] ([^"\[\]=]+?)(?: "((?:[^"\\]|\\.)*)")?(?: = "((?:[^"\\]|\\.)*)")?(?: \[|\s*$| \()')


@dataclass(frozen=True, slots=True)
class Element:
    index: int
    role: str
    label: str
    value: str | None = None
    token: str | None = None
    frame: Box | None = None
    """Screen-absolute, native units (macOS points, Linux/Windows pixels)."""
    shot: Box | None = None
    """The same box in the driver's screenshot pixels (0.37 ``screenshot_frame``)."""
    enabled: bool | None = None


def _box(raw: Any) -> Box | None:
    if not isinstance(raw, Mapping):
        return None
    try:
        box = (
            float(raw["x"]),
            float(raw["y"]),
            float(raw.get("w", raw.get("width"))),
            float(raw.get("h", raw.get("height"))),
        )
    except (KeyError, TypeError, ValueError):
        return None
    return None if box[2] <= 0 or box[3] <= 0 else box


def parse_elements(structured: Mapping[str, Any], texts: Sequence[str]) -> list[Element]:
    records = structured.get("elements")
    snapshot = structured.get("snapshot_id")
    if isinstance(records, list) and records:
        out = []
        for position, record in enumerate(records):
            if not isinstance(record, Mapping):
                continue
            index = record.get("element_index")
            index = index if isinstance(index, int) else position
            token = record.get("element_token")
            if not isinstance(token, str):
                token = f"{snapshot}:{index}" if isinstance(snapshot, str) else None
            value = record.get("value")
            enabled = record.get("enabled")
            out.append(
                Element(
                    index=index,
                    role=str(record.get("role") or ""),
                    label=str(record.get("label") or record.get("description") or ""),
                    value=str(value) if value not in (None, "") else None,
                    token=token,
                    frame=_box(record.get("frame") or record.get("bounds")),
                    shot=_box(record.get("screenshot_frame")),
                    enabled=enabled if isinstance(enabled, bool) else None,
                )
            )
        return out
    markdown = structured.get("tree_markdown")
    lines = (markdown if isinstance(markdown, str) else "\n".join(texts)).splitlines()
    out = []
    for line in lines:
        match = _ROW.match(line)
        if match is None:
            continue
        index = int(match.group(1))
        token = f"{snapshot}:{index}" if isinstance(snapshot, str) else None
        out.append(Element(index=index, role=match.group(2).strip(), label=match.group(3) or "", value=match.group(4),
                           token=token))  # fmt: skip
    return out


@dataclass(frozen=True, slots=True)
class Geometry:
    """Pixels of one capture: the driver's screenshot, the image the model saw, and the window (native units)."""

    shot_w: int = 0
    shot_h: int = 0
    model_w: int = 0
    model_h: int = 0
    window: Box | None = None

    @property
    def has_image(self) -> bool:
        return self.shot_w > 0 and self.model_w > 0

    def to_driver(self, x: float, y: float) -> tuple[float, float]:
        """Model coordinates (image pixels) → the driver's screenshot pixels."""
        fx = self.shot_w / self.model_w if self.model_w else 1.0
        fy = self.shot_h / self.model_h if self.model_h else fx
        return round(x * fx, 1), round(y * fy, 1)

    def shot_box(self, element: Element) -> Box | None:
        """The element's box in screenshot pixels: the driver's own frame, else the window-scaled native frame."""
        if element.shot is not None:
            return element.shot
        if element.frame is None or self.window is None or not self.window[2] or not self.shot_w:
            return None
        ratio = self.shot_w / self.window[2]
        x, y, w, h = element.frame
        return ((x - self.window[0]) * ratio, (y - self.window[1]) * ratio, w * ratio, h * ratio)

    def center(self, element: Element) -> tuple[float, float] | None:
        """The element's centre in the driver's screenshot pixels (for drivers' pixel-only actions)."""
        box = self.shot_box(element)
        if box is None:
            return None
        return round(box[0] + box[2] / 2, 1), round(box[1] + box[3] / 2, 1)

    def model_box(self, element: Element) -> tuple[Box, bool] | None:
        """(bounds, in image pixels?) as shown to the model."""
        if element.shot is not None and self.shot_w and self.model_w:
            f = self.model_w / self.shot_w
            x, y, w, h = element.shot
            return (x * f, y * f, w * f, h * f), True
        if element.frame is None:
            return None
        x, y, w, h = element.frame
        if self.window is not None:
            x, y = x - self.window[0], y - self.window[1]
        return (x, y, w, h), False


@dataclass(frozen=True, slots=True)
class Seen:
    """What the latest capture of the sticky target showed: its elements by index and its pixels."""

    elements: Mapping[int, Element]
    geometry: Geometry
    snapshot_id: str | None = None


def bounds_scale(geometry: Geometry, elements: Sequence[Element]) -> float | None:
    """Native units per image pixel when element bounds are native and disagree with the image by > 5 %."""
    if not geometry.model_w or not geometry.model_h:
        return None
    native = [geometry.model_box(e) for e in elements]
    boxes = [b for b, in_pixels in (n for n in native if n is not None) if not in_pixels]
    if not boxes:
        return None
    if geometry.window is not None and geometry.window[2] > 0:
        ratio = geometry.window[2] / geometry.model_w
    else:
        max_x = max(x + w for x, _, w, _ in boxes)
        max_y = max(y + h for _, y, _, h in boxes)
        ratio = max(max_x / geometry.model_w, max_y / geometry.model_h)
        if ratio <= 1:
            return None
    return round(ratio, 2) if abs(ratio - 1) > SCALE_TOLERANCE else None


def _cut(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[: limit - 1] + "…", True)


def element_rows(
    elements: Sequence[Element], geometry: Geometry, *, limit: int = MAX_INLINE
) -> tuple[list[dict[str, Any]], bool]:
    """The inline element list for the model, and whether anything was cut (count or label)."""
    rows: list[dict[str, Any]] = []
    cut = len(elements) > limit
    for element in elements[:limit]:
        label, truncated = _cut(element.label, MAX_LABEL)
        row: dict[str, Any] = {"index": element.index, "role": element.role, "label": label}
        if truncated:
            row["label_truncated"] = True
            cut = True
        if element.value is not None and element.value != element.label:
            row["value"], value_cut = _cut(element.value, MAX_LABEL)
            cut = cut or value_cut
        if element.enabled is False:
            row["enabled"] = False
        placed = geometry.model_box(element)
        row["bounds"] = [round(v) for v in placed[0]] if placed is not None else None
        rows.append(row)
    return rows, cut


def full_rows(elements: Sequence[Element], geometry: Geometry) -> list[dict[str, Any]]:
    """Every element, labels uncut (the spill file's content)."""
    rows = []
    for element in elements:
        placed = geometry.model_box(element)
        rows.append(
            {
                "index": element.index,
                "role": element.role,
                "label": element.label,
                "value": element.value,
                "bounds": [round(v) for v in placed[0]] if placed is not None else None,
            }
        )
    return rows


def element_summary(elements: Sequence[Element]) -> str:
    """A short text list (at most 40 lines, labels cut to 60 characters), e.g. for an auxiliary vision prompt."""
    lines = [f"[{e.index}] {e.role} {_cut(e.label, SUMMARY_LABEL)[0]!r}" for e in elements[:SUMMARY_LINES]]
    if len(elements) > SUMMARY_LINES:
        lines.append(f"… and {len(elements) - SUMMARY_LINES} more")
    return "\n".join(lines)
