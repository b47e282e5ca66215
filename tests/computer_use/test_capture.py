"""Capture against the simulated driver: modes, target binding (explicit, by app, frontmost, never a silent
fallback), the screen and desktop sentinels, element limits and spill files, caches, HiDPI and bounds_scale."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from fixtures.cua_driver_sim import CALCULATOR_PID, CALCULATOR_WINDOW_ID, TEXT_EDITOR_WINDOW_ID
from hermes_acp.core import ImageBlock, ImagePart, TextBlock, TextPart
from hermes_acp.images.codec import fit, mark_and_fit
from hermes_acp.images.gate import NATIVE_MAX_EDGE
from hermes_acp.providers.scripted import ScriptedProvider, text_reply
from tests.fakes.cache_age import age_past_the_grace

from .support import BUSY_WINDOW, busy_png, catalog_model, open_desk, payload, use_busy_pixels

pytestmark = pytest.mark.anyio


def pixel_counts(block: ImageBlock | ImagePart) -> int:
    with Image.open(io.BytesIO(base64.b64decode(block.data))) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 24)
    assert colours is not None
    return len(colours)


async def test_som_mode_returns_elements_and_an_image_with_numbered_boxes_drawn(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        som = await desk.act(action="capture", app="Calculator")
        vision = await desk.act(action="capture", app="Calculator", mode="vision")
    som_image, vision_image = som.parts[1], vision.parts[1]
    assert isinstance(som_image, ImagePart) and isinstance(vision_image, ImagePart)
    assert len(payload(som)["elements"]) == 16
    assert pixel_counts(som_image) > pixel_counts(vision_image)  # the coloured boxes and numbers
    assert [type(b) for b in som.content] == [TextBlock, ImageBlock]


async def test_vision_mode_is_pixels_only_and_ax_mode_elements_only(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        vision = await desk.act(action="capture", app="Calculator", mode="vision")
        ax = await desk.act(action="capture", app="Calculator", mode="ax")
    assert "elements" not in payload(vision) and isinstance(vision.parts[1], ImagePart)
    assert len(payload(ax)["elements"]) == 16 and "image" not in payload(ax)
    assert len(ax.parts) == 1 and not any(isinstance(b, ImageBlock) for b in ax.content)


@pytest.mark.parametrize(
    ("arguments", "window_id"),
    [
        ({"app": "calculator"}, CALCULATOR_WINDOW_ID),
        ({"app": "Untitled"}, TEXT_EDITOR_WINDOW_ID),
        ({"pid": CALCULATOR_PID}, CALCULATOR_WINDOW_ID),
        ({"window_id": CALCULATOR_WINDOW_ID}, CALCULATOR_WINDOW_ID),
        ({}, TEXT_EDITOR_WINDOW_ID),
    ],
)
async def test_capture_binds_the_target_explicitly_by_app_or_frontmost(
    tmp_path: Path, arguments: dict[str, object], window_id: int
) -> None:
    async with open_desk(tmp_path) as desk:
        outcome = await desk.act(action="capture", **arguments)
    assert payload(outcome)["target"]["window_id"] == window_id


async def test_a_capture_that_matches_nothing_fails_and_keeps_the_old_target(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        labels = await desk.capture("Calculator")
        missing = await desk.act(action="capture", app="Numbers")
        click = await desk.act(action="click", element=labels["7"])
        state = desk.state()
    assert missing.failed and missing.error_code == "no_matching_window"
    assert "Calculator" in missing.parts[0].text  # type: ignore[union-attr]
    assert payload(click)["target"]["app"] == "Calculator"
    assert state["calculator"]["display"] == "7"


async def test_screen_sentinel_is_pixels_only_and_leaves_no_input_target(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        await desk.capture("Calculator")
        screen = await desk.act(action="capture", app="screen")
        click = await desk.act(action="click", coordinate=[10, 10])
        journal = desk.journal()
    body = payload(screen)
    assert "elements" not in body and {w["app"] for w in body["windows"]} == {"Calculator", "TextEditor"}
    assert isinstance(screen.parts[1], ImagePart)
    assert click.failed and payload(click)["code"] == "no_target" and journal == []


async def test_desktop_sentinel_targets_only_the_desktop_shell(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        outcome = await desk.act(action="capture", app="desktop")
    assert outcome.error_code == "no_matching_window"
    assert "desktop shell" in outcome.parts[0].text  # type: ignore[union-attr]


async def test_long_labels_are_cut_inline_and_the_full_tree_spills_to_the_cache(tmp_path: Path) -> None:
    title = "T" * 300
    async with open_desk(tmp_path) as desk:
        labels = await desk.capture("TextEditor")
        await desk.act(action="set_value", element=labels.get("", 0), value=title)
        outcome = await desk.act(action="capture", app="TextEditor")
        body = payload(outcome)
        spill = Path(body["elements_file"])
        spilled = spill.read_text()
    entry = next(row for row in body["elements"] if row.get("label_truncated"))
    assert len(entry["label"]) == 120
    assert spill.parent == desk.settings.cache_dir / "computer_use" and spill.name.startswith("elements_")
    assert title in spilled


async def test_screenshots_are_copied_to_the_image_cache_which_keeps_20_files(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        folder = desk.settings.cache_dir / "images"
        outcomes = [await desk.act(action="capture", app="Calculator", mode="vision") for _ in range(22)]
        young = [p for p in folder.iterdir() if not p.name.startswith(".")]
        age_past_the_grace(folder)  # a minute later
        outcomes.append(await desk.act(action="capture", app="Calculator", mode="vision"))
        images = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
        last = Path(payload(outcomes[-1])["screenshot_path"])
    assert len(young) == 22, "nothing younger than the grace is pruned"
    assert len(images) == 20 and last in images
    with Image.open(last) as saved:
        assert saved.size == (320, 400)


async def test_hidpi_pixel_coordinates_hit_the_element_drawn_at_them(tmp_path: Path) -> None:
    async with open_desk(tmp_path, faults=[{"knob": "hidpi_scale", "scale": 2.0}]) as desk:
        outcome = await desk.act(action="capture", app="Calculator")
        body = payload(outcome)
        five = next(row for row in body["elements"] if row["label"] == "5")
        x, y, w, h = five["bounds"]
        click = await desk.act(action="click", coordinate=[x + w / 2, y + h / 2])
        state = desk.state()
    assert (body["image"]["width"], body["image"]["height"]) == (640, 800)
    assert "bounds_scale" not in body
    assert not click.failed and state["calculator"]["display"] == "5"


async def test_coordinates_map_through_a_resized_image_back_to_driver_pixels(tmp_path: Path) -> None:
    faults = [
        {"knob": "max_image_dimension", "value": 2400},
        {"knob": "big_window", "app": "calculator", "width": 2000, "height": 500},
    ]
    async with open_desk(tmp_path, faults=faults) as desk:
        outcome = await desk.act(action="capture", app="Calculator", mode="vision")
        body = payload(outcome)
        image = outcome.parts[1]
        assert isinstance(image, ImagePart)
        with Image.open(io.BytesIO(base64.b64decode(image.data))) as shown:
            width, height = shown.size
        # "9" is the third of four keypad columns in the first row (unscaled, x would land on "8")
        click = await desk.act(action="click", coordinate=[width * 5 / 8, height * 0.3])
        state = desk.state()
    assert (body["image"]["width"], body["image"]["height"]) == (width, height) == (1568, 392)
    assert not click.failed and state["calculator"]["display"] == "9"


async def test_bounds_scale_is_hinted_when_native_bounds_and_the_image_disagree(tmp_path: Path) -> None:
    async with open_desk(tmp_path, profile="0.2x", faults=[{"knob": "hidpi_scale", "scale": 2.0}]) as desk:
        body = payload(await desk.act(action="capture", app="Calculator"))
    assert body["bounds_scale"] == 0.5 and "bounds_note" in body


async def test_a_model_without_vision_gets_the_element_list_or_the_auxiliary_description(tmp_path: Path) -> None:
    blind = catalog_model(vision=False)
    aux = ScriptedProvider([text_reply("Keypad; display shows 0.")], provider_id="aux")
    aux_config = '[auxiliary.vision]\nmodel = "aux:vl"\n'
    async with open_desk(tmp_path / "a", model=blind) as desk:
        text_only = await desk.act(action="capture", app="Calculator")
    async with open_desk(
        tmp_path / "b", model=blind, models=[catalog_model("aux:vl")], providers={"aux": aux}, config=aux_config
    ) as desk:
        described = await desk.act(action="capture", app="Calculator")
    for outcome, route in ((text_only, "text"), (described, "auxiliary")):
        assert not any(isinstance(p, ImagePart) for p in outcome.parts)
        assert payload(outcome)["image"]["route"] == route and len(payload(outcome)["elements"]) == 16
        assert any(isinstance(b, ImageBlock) for b in outcome.content)  # the editor still sees the screenshot
    assert isinstance(described.parts[1], TextPart) and "display shows 0" in described.parts[1].text
    assert len(aux.requests) == 1


@pytest.mark.parametrize("route", ["native", "auxiliary"])
async def test_a_busy_screenshot_is_fitted_once_and_the_gate_passes_it_on_as_it_is(tmp_path: Path, route: str) -> None:
    """The capture marks and fits the screenshot in one pass; the gate's own fit finds it fitting and hands on the
    same bytes, undecoded (the editor, the model and the describer see one image)."""
    aux = ScriptedProvider([text_reply("A calculator.")], provider_id="aux")
    options: dict[str, Any] = (
        {}
        if route == "native"
        else {"model": catalog_model(vision=False), "models": [catalog_model("aux:vl")], "providers": {"aux": aux},
              "config": '[auxiliary.vision]\nmodel = "aux:vl"\n'}
    )  # fmt: skip
    async with open_desk(tmp_path, faults=BUSY_WINDOW, **options) as desk:
        use_busy_pixels(desk.cu.driver)
        outcome = await desk.act(action="capture", app="Calculator")
    body = payload(outcome)
    editor = next(block for block in outcome.content if isinstance(block, ImageBlock))
    assert body["image"]["route"] == route and len(body["elements"]) == 16
    assert editor.media_type == "image/jpeg", "busy pixels do not fit as a PNG"
    assert len(base64.b64decode(editor.data)) <= desk.settings.vision.embed_target_bytes
    if route == "native":
        shown = outcome.parts[1]
        assert isinstance(shown, ImagePart) and (shown.media_type, shown.data) == (editor.media_type, editor.data)
    else:
        [request] = aux.requests
        sent = next(p for m in request.messages for p in getattr(m, "parts", []) if isinstance(p, ImagePart))
        assert (sent.media_type, sent.data) == (editor.media_type, editor.data)


def test_busy_pixels_are_decoded_once_and_never_encoded_as_a_png_that_cannot_fit() -> None:
    """A PNG attempt is skipped when the source's bytes scaled by the area already exceed the budget; a fitted image
    fitted again is returned as it is."""
    data = base64.b64decode(busy_png(1280, 800))
    target = 256 * 1024
    box = (1, (10.0, 10.0, 60.0, 20.0))
    marked = mark_and_fit(data, "image/png", [box], max_edge=NATIVE_MAX_EDGE, target_bytes=target)
    assert marked.media_type == "image/jpeg" and len(marked.data) <= target
    assert marked.encoded and not any(e.startswith("PNG") for e in marked.encoded), marked.encoded
    again = fit(marked.data, marked.media_type, max_edge=NATIVE_MAX_EDGE, target_bytes=target)
    assert again.encoded == () and again.data == marked.data, "fitting, so not decoded"
