"""The simulator answering as cua-driver's macOS build (``--platform macos``, docs/cua-driver.md §10.6): Retina points
and ``screenshot_scale``, windows on Spaces, ``check_permissions`` and the TCC rows, and what each missing grant
takes away; the Linux build lists no ``check_permissions``."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import CALC, EDITOR, open_sim

pytestmark = pytest.mark.anyio


async def test_the_macos_build_lists_spaces_points_and_its_permissions(tmp_path: Path) -> None:
    faults = [{"knob": "other_space", "app": "texteditor"}]
    async with open_sim(tmp_path, platform="macos", faults=faults) as sim:
        tools = await sim.tools()
        listed = (await sim.call("list_windows")).structured
        read = await sim.call("get_window_state", **CALC, tree_format="elements")
        permissions = (await sim.call("check_permissions")).structured
        prompted = await sim.call("check_permissions", prompt=True)
        health = (await sim.call("health_report")).structured
    assert "check_permissions" in tools
    assert listed["current_space_id"] == 1
    calculator, editor = sorted(listed["windows"], key=lambda w: w["window_id"])
    assert (calculator["on_current_space"], calculator["space_ids"], calculator["is_on_screen"]) == (True, [1], True)
    assert (editor["on_current_space"], editor["space_ids"], editor["is_on_screen"]) == (False, [2], False)
    assert "x" not in calculator and calculator["bounds"] == {"x": 880, "y": 120, "width": 320, "height": 400}
    assert read.structured["screenshot_scale"] == 2.0 and read.image_size() == (640, 800)
    seven = read.structured["elements"][0]
    assert seven["frame"] == {"x": 884, "y": 204, "w": 72, "h": 72}, "points, screen-absolute"
    assert seven["screenshot_frame"] == {"x": 8, "y": 168, "w": 144, "h": 144}, "pixels of the 2x screenshot"
    assert permissions == {"accessibility": True, "screen_recording": True, "screen_recording_capturable": True}
    assert prompted.is_error
    rows = {row["name"]: row["status"] for row in health["checks"]}
    assert (health["platform"], rows["tcc_accessibility"], rows["tcc_screen_recording"]) == ("macos", "pass", "pass")


async def test_without_screen_recording_a_read_has_no_image_and_the_desktop_none(tmp_path: Path) -> None:
    async with open_sim(tmp_path, platform="macos", faults=[{"knob": "tcc", "screen_recording": False}]) as sim:
        read = await sim.call("get_window_state", **CALC, tree_format="elements")
        desktop = await sim.call("get_desktop_state")
        permissions = (await sim.call("check_permissions")).structured
        click = await sim.call("click", **CALC, element_token=read.structured["elements"][0]["element_token"])
        health = (await sim.call("health_report")).structured
    assert not read.is_error and read.images == [] and len(read.structured["elements"]) == 16
    assert read.structured["screenshot_frame_valid"] is False
    assert read.structured["screenshot_error"]["code"] == "px_capture_unavailable"
    assert desktop.is_error and "Screen Recording permission is not granted" in desktop.text
    assert (permissions["accessibility"], permissions["screen_recording"]) == (True, False)
    assert not click.is_error, "input needs Accessibility only"
    assert health["overall"] == "degraded"


async def test_without_accessibility_elements_and_input_fail_and_a_screenshot_still_comes(tmp_path: Path) -> None:
    async with open_sim(tmp_path, platform="macos", faults=[{"knob": "tcc", "accessibility": False}]) as sim:
        tree = await sim.call("get_window_state", **EDITOR)
        shot = await sim.call("get_window_state", **EDITOR, include_accessibility_tree=False)
        typed = await sim.call("type_text", **EDITOR, text="x")
        journal = sim.journal()
    for refused in (tree, typed):
        assert refused.is_error and refused.code == "tool_invocation_failed"
        assert "Accessibility permission is not granted to CuaDriver" in refused.text
    assert not shot.is_error and shot.image_size() == (960, 720)
    assert journal == []


async def test_the_linux_build_lists_no_check_permissions(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        tools = await sim.tools()
        listed = (await sim.call("list_windows")).structured
        asked = await sim.call("check_permissions")
    assert "check_permissions" not in tools and "current_space_id" not in listed
    assert asked.is_error and asked.code == "permission_denied"
