"""computer_use against the simulated driver answering as its macOS build (``--platform macos``): geometry in
points with a Retina ``screenshot_scale`` (pixels the model sends land on the element drawn there, whichever way
the driver reports frames), the Accessibility and Screen Recording permissions checked before anything that needs
them (with what to grant, where; what does not need the missing one still works), and windows on another Space
never chosen as the frontmost."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.cua_driver_sim import CALCULATOR_WINDOW_ID, TEXT_EDITOR_WINDOW_ID
from hermes_acp.computer_use.permissions import DesktopAccess
from hermes_acp.computer_use.results import ComputerUseRefusal
from hermes_acp.computer_use.target import choose_window, window_rows

from .support import open_desk, payload

pytestmark = pytest.mark.anyio

NO_ACCESSIBILITY = [{"knob": "tcc", "accessibility": False}]
NO_SCREEN_RECORDING = [{"knob": "tcc", "screen_recording": False}]


async def test_points_and_the_retina_scale_map_a_pixel_click_onto_the_element_drawn_there(tmp_path: Path) -> None:
    async with open_desk(tmp_path, platform="macos") as desk:
        body = payload(await desk.act(action="capture", app="Calculator"))
        five = next(row for row in body["elements"] if row["label"] == "5")
        x, y, w, h = five["bounds"]
        click = await desk.act(action="click", coordinate=[x + w / 2, y + h / 2])
        state = desk.state()
    assert body["screenshot_scale"] == 2.0
    assert (body["image"]["width"], body["image"]["height"]) == (640, 800), "320×400 points at 2×"
    assert "bounds_scale" not in body, "0.37 gives each element's box in screenshot pixels"
    assert not click.failed and state["calculator"]["display"] == "5"


async def test_frames_in_points_are_said_to_be_points_and_their_scale_still_finds_the_element(tmp_path: Path) -> None:
    async with open_desk(tmp_path, profile="0.2x", platform="macos") as desk:
        body = payload(await desk.act(action="capture", app="Calculator"))
        five = next(row for row in body["elements"] if row["label"] == "5")
        x, y, w, h = (value / body["bounds_scale"] for value in five["bounds"])
        click = await desk.act(action="click", coordinate=[x + w / 2, y + h / 2])
        state = desk.state()
    assert body["screenshot_scale"] == 2.0 and body["bounds_scale"] == 0.5
    assert body["bounds_note"].startswith("element bounds are points (macOS), not image pixels: divide them by 0.5")
    assert not click.failed and state["calculator"]["display"] == "5"


async def test_without_accessibility_elements_and_input_are_refused_before_the_desktop_hears_of_them(
    tmp_path: Path,
) -> None:
    async with open_desk(tmp_path, platform="macos", faults=NO_ACCESSIBILITY) as desk:
        som = await desk.act(action="capture", app="Calculator")
        vision = await desk.act(action="capture", app="Calculator", mode="vision")
        click = await desk.act(action="click", coordinate=[100, 300])
        listed = await desk.act(action="list_windows")
        journal = desk.journal()
    assert som.failed and som.error_code == "desktop_permission_missing"
    message = payload(som)["error"]
    assert "macOS has not given the desktop driver the Accessibility permission it needs" in message
    assert "System Settings → Privacy & Security → Accessibility, to CuaDriver" in message
    assert not vision.failed and payload(vision)["image"]["width"] == 640, "a screenshot needs no Accessibility"
    refused = payload(click)
    assert click.failed and refused["code"] == "desktop_permission_missing"
    assert (refused["verdict"]["decision"], refused["verdict"]["retryable"]) == ("deny", False)
    assert journal == [], "nothing was delivered"
    assert not listed.failed


async def test_without_screen_recording_screenshots_are_refused_and_elements_still_work(tmp_path: Path) -> None:
    async with open_desk(tmp_path, platform="macos", faults=NO_SCREEN_RECORDING) as desk:
        som = await desk.act(action="capture", app="Calculator")
        screen = await desk.act(action="capture", app="screen")
        labels = await desk.capture("Calculator", mode="ax")
        click = await desk.act(action="click", element=labels["7"])
        state = desk.state()
    for refused in (som, screen):
        assert refused.failed and refused.error_code == "desktop_permission_missing"
        message = payload(refused)["error"]
        assert "Screen Recording permission it needs (Screen Recording to take screenshots)" in message
        assert "Privacy & Security → Screen & System Audio Recording" in message
        assert "A capture in ax mode (elements, no screenshot) works without it." in message
    assert not click.failed and state["calculator"]["display"] == "7"


async def test_a_window_on_another_space_is_never_taken_for_the_frontmost(tmp_path: Path) -> None:
    """The TextEditor is stacked on top, on another Space: the frontmost window on screen is the Calculator."""
    async with open_desk(tmp_path, platform="macos", faults=[{"knob": "other_space", "app": "texteditor"}]) as desk:
        frontmost = payload(await desk.act(action="capture"))
        windows = payload(await desk.act(action="list_windows"))["windows"]
        named = payload(await desk.act(action="capture", app="TextEditor"))
    assert frontmost["target"]["window_id"] == CALCULATOR_WINDOW_ID
    editor = next(row for row in windows if row["window_id"] == TEXT_EDITOR_WINDOW_ID)
    assert editor["on_current_space"] is False
    assert named["target"]["window_id"] == TEXT_EDITOR_WINDOW_ID, "named explicitly, it is still bound"
    assert named["note"].startswith("this window is on another Space (macOS desktop)")


def test_spaces_are_read_from_the_window_s_flag_or_from_its_space_ids() -> None:
    bounds = {"x": 0, "y": 0, "width": 10, "height": 10}
    listing = {
        "current_space_id": 7,
        "windows": [
            {"window_id": 1, "pid": 5, "app_name": "A", "title": "a", "bounds": bounds, "z_index": 3,
             "space_ids": [8]},
            {"window_id": 2, "pid": 5, "app_name": "B", "title": "b", "bounds": bounds, "z_index": 2,
             "space_ids": [7, 8]},
            {"window_id": 3, "pid": 6, "app_name": "C", "title": "c", "bounds": bounds, "z_index": 1,
             "on_current_space": False, "space_ids": [7]},
            {"window_id": 4, "pid": 6, "app_name": "D", "title": "d", "bounds": bounds, "z_index": 0},
        ],
    }  # fmt: skip
    rows = window_rows(listing)
    assert [row.other_space for row in rows] == [True, False, True, False]
    assert choose_window(rows).window_id == 2
    assert rows[0].describe() == "A — a (pid 5, window_id 1, on another Space)"


def test_the_permission_report_blocks_only_what_it_says_is_missing() -> None:
    linux = DesktopAccess.from_report({"x11": True, "atspi": True})
    linux.require(("accessibility", "screen_recording"))
    both = DesktopAccess.from_report({"accessibility": False, "screen_recording": False})
    with pytest.raises(ComputerUseRefusal) as caught:
        both.require(("accessibility", "screen_recording"))
    assert caught.value.code == "desktop_permission_missing"
    assert caught.value.details == {"missing_permissions": ["accessibility", "screen_recording"]}
    assert "the Accessibility and Screen Recording permissions it needs" in str(caught.value)
    both.require(())
