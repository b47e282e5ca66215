"""Pixels: decode, measure, shrink and re-encode images to a byte budget, and draw set-of-mark boxes (Pillow).

``fit`` bounds an image's long edge and re-encodes it until it fits a byte budget (PNG when that can fit, else
JPEG at falling quality, then smaller), reporting the scale it applied so coordinates can be mapped back; an
image that already fits is returned as it is, undecoded. ``mark_and_fit`` draws numbered element boxes on a
screenshot (the model's "set of marks") and fits the result in the same pass: one decode, one kept encode. The
PNG attempt is skipped when the source's bytes scaled by the area already exceed the budget (a resized
screenshot compresses no better per pixel than its source). All functions are synchronous and CPU-bound:
callers run them off the event loop (``anyio.to_thread``). This is the only module of hermes_acp that imports
PIL.

It deliberately knows nothing about the model, the driver or routes.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image

__all__ = ["Fitted", "ImageDecodeError", "Mark", "fit", "mark_and_fit", "measure"]

_JPEG_QUALITIES = (85, 72, 60, 45)
_SHRINK = 0.85
_FAR_OFF = 3
_MIN_EDGE = 160
_MARK_COLOURS = ((230, 25, 75), (60, 120, 216), (0, 150, 70), (245, 130, 48), (145, 30, 180))

Mark = tuple[int, tuple[float, float, float, float]]
"""One set-of-marks box: the element index and its (x, y, w, h) in the screenshot's pixels."""


class ImageDecodeError(ValueError):
    """The bytes are not an image Pillow can read."""


@dataclass(frozen=True, slots=True)
class Fitted:
    data: bytes
    media_type: str
    width: int
    height: int
    scale: float
    """Delivered width / original width (1.0 when the pixels were not resized)."""
    original_width: int
    original_height: int
    encoded: tuple[str, ...] = ()
    """The encodings tried, in order (``"PNG"``, ``"JPEG 85"``...); empty when the source was returned as it is,
    undecoded."""


def _open(data: bytes) -> Image.Image:
    from PIL import Image, UnidentifiedImageError

    try:
        image = Image.open(io.BytesIO(data))
        image.load()
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise ImageDecodeError(f"not a readable image: {exc}") from exc
    return image


def measure(data: bytes) -> tuple[int, int]:
    """(width, height) of an encoded image (reads the header only)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.size
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise ImageDecodeError(f"not a readable image: {exc}") from exc


def _encode(image: Image.Image, fmt: str, quality: int = 85) -> bytes:
    buffer = io.BytesIO()
    if fmt == "PNG":
        image.save(buffer, format="PNG", optimize=False, compress_level=6)
    else:
        image.convert("RGB").save(buffer, format="JPEG", quality=quality, optimize=True)
    return buffer.getvalue()


def _resized(image: Image.Image, max_edge: int) -> Image.Image:
    from PIL import Image

    width, height = image.size
    longest = max(width, height)
    if longest <= max_edge:
        return image
    factor = max_edge / longest
    return image.resize((max(1, round(width * factor)), max(1, round(height * factor))), Image.Resampling.LANCZOS)


def fit(data: bytes, media_type: str, *, max_edge: int, target_bytes: int) -> Fitted:
    """Shrink to ``max_edge`` and re-encode to fit ``target_bytes`` (unchanged when it already fits both)."""
    width, height = measure(data)
    if max(width, height) <= max_edge and len(data) <= target_bytes and media_type in ("image/png", "image/jpeg"):
        return Fitted(data, media_type, width, height, 1.0, width, height)
    original = _open(data)
    image = original.convert("RGBA") if original.mode == "P" else original
    return _fit(image, media_type, len(data), max_edge=max_edge, target_bytes=target_bytes)


def mark_and_fit(data: bytes, media_type: str, boxes: Sequence[Mark], *, max_edge: int, target_bytes: int) -> Fitted:
    """The screenshot with each box outlined and numbered, fitted like ``fit`` (just ``fit`` when there are none)."""
    if not boxes:
        return fit(data, media_type, max_edge=max_edge, target_bytes=target_bytes)
    image = _open(data).convert("RGB")
    _draw_marks(image, boxes)
    return _fit(image, "image/png", len(data), max_edge=max_edge, target_bytes=target_bytes)


def _fit(image: Image.Image, media_type: str, source_bytes: int, *, max_edge: int, target_bytes: int) -> Fitted:
    width, height = image.size
    image = _resized(image, max_edge)
    tried: list[str] = []
    while True:
        area = image.size[0] * image.size[1] / (width * height)
        png_may_fit = source_bytes * area <= target_bytes
        if png_may_fit and (image.mode in ("RGBA", "LA") or media_type == "image/png"):
            encoded = _encode(image, "PNG")
            tried.append("PNG")
            if len(encoded) <= target_bytes:
                scale = image.size[0] / width
                return Fitted(encoded, "image/png", *image.size, scale, width, height, tuple(tried))
        size = 0
        for quality in _JPEG_QUALITIES:
            encoded = _encode(image, "JPEG", quality)
            tried.append(f"JPEG {quality}")
            size = len(encoded)
            if size <= target_bytes or max(image.size) <= _MIN_EDGE:
                scale = image.size[0] / width
                return Fitted(encoded, "image/jpeg", *image.size, scale, width, height, tuple(tried))
            if size > _FAR_OFF * target_bytes:
                break
        factor = min(_SHRINK, max(0.3, (target_bytes / size) ** 0.5 * 0.95))
        image = _resized(image, max(_MIN_EDGE, int(max(image.size) * factor)))


def _draw_marks(image: Image.Image, boxes: Sequence[Mark]) -> None:
    from PIL import ImageDraw, ImageFont

    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    for position, (index, (x, y, w, h)) in enumerate(boxes):
        colour = _MARK_COLOURS[position % len(_MARK_COLOURS)]
        draw.rectangle((x, y, x + w - 1, y + h - 1), outline=colour, width=2)
        label = str(index)
        left, top, right, bottom = draw.textbbox((0, 0), label, font=font)
        tag_w, tag_h = right - left + 4, bottom - top + 4
        tx, ty = max(0.0, x), max(0.0, y - tag_h) if y >= tag_h else y
        draw.rectangle((tx, ty, tx + tag_w, ty + tag_h), fill=colour)
        draw.text((tx + 2 - left, ty + 2 - top), label, fill=(255, 255, 255), font=font)
