"""Screenshots are real PNGs that show the widgets where the element frames say they are."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from fixtures.cua_driver_sim.paint import BUTTON, FIELD, INK, OPERATOR_BUTTON, delivered_size

from .support import CALC, open_sim

pytestmark = pytest.mark.anyio


def decode_rgb(png: bytes) -> tuple[int, int, bytes]:
    """Decode the fake's own PNGs (8-bit RGB, filter 0 on every row) into raw RGB rows."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    offset, width, height, data = 8, 0, 0, b""
    while offset < len(png):
        (length,) = struct.unpack(">I", png[offset : offset + 4])
        tag, body = png[offset + 4 : offset + 8], png[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", png[offset + 8 + length : offset + 12 + length])
        assert crc == zlib.crc32(tag + body) & 0xFFFFFFFF
        if tag == b"IHDR":
            width, height, depth, color_type = struct.unpack(">IIBB", body[:10])
            assert (depth, color_type) == (8, 2)
        elif tag == b"IDAT":
            data += body
        offset += 12 + length
    raw = zlib.decompress(data)
    stride = 1 + 3 * width
    assert len(raw) == stride * height
    assert all(raw[row * stride] == 0 for row in range(height))
    return width, height, raw


def pixel(image: tuple[int, int, bytes], x: int, y: int) -> tuple[int, int, int]:
    width, _height, raw = image
    start = y * (1 + 3 * width) + 1 + 3 * x
    return raw[start], raw[start + 1], raw[start + 2]


async def test_window_screenshot_paints_buttons_and_display_text(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        tokens = await sim.tokens(**CALC)
        for label in ("4", "2"):
            await sim.call("click", **CALC, element_token=tokens[label])
        read = await sim.call("get_window_state", **CALC, tree_format="elements")
        image = decode_rgb(read.images[0])
        assert image[:2] == (320, 400)
        frames = {element["label"]: element["screenshot_frame"] for element in read.structured["elements"]}
        seven, plus = frames["7"], frames["+"]
        assert pixel(image, seven["x"] + 3, seven["y"] + 3) == BUTTON
        assert pixel(image, plus["x"] + 3, plus["y"] + 3) == OPERATOR_BUTTON
        assert pixel(image, 20, 20) == FIELD
        display_ink = sum(pixel(image, x, y) == INK for x in range(150, 310) for y in range(12, 68))
        assert display_ink > 50, "the display shows '42' in dark ink"


async def test_desktop_screenshot_shows_every_window_at_its_bounds(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        desktop = await sim.call("get_desktop_state")
        image = decode_rgb(desktop.images[0])
        assert image[:2] == (1280, 800)
        windows = {window["window_id"]: window["bounds"] for window in desktop.structured["windows"]}
        calc = windows[CALC["window_id"]]
        display = pixel(image, calc["x"] + 20, calc["y"] + 20)
        assert display == FIELD
        assert pixel(image, 5, 790) != FIELD, "outside every window is desktop background"


def test_delivered_size_reproduces_the_recorded_downscale() -> None:
    assert delivered_size(2200, 1300, 1568) == (1394, 824, 1394 / 2200)
    assert delivered_size(1280, 800, 1568) == (1280, 800, 1.0)
    assert delivered_size(320, 400, 200) == (160, 200, 0.5)
    assert delivered_size(2560, 1600, 0) == (2560, 1600, 1.0)
