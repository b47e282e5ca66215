"""The real cua-driver against the GTK calculator and form under Xvfb: observe, click and type by token.

Every effect is checked twice: by what the driver says, and independently by the app's own state file
(see fixtures/gtk_apps/app_state.py). Only routes that work headless are used as successes
(docs/cua-driver.md §8: AT-SPI actions by element token, foreground XTest keys); background
keyboard input is checked as the exact refusal it is there.
"""

from __future__ import annotations

import re
import struct
from typing import Any

import anyio
import pytest

from fixtures.desktop import AppHandle, Desktop
from fixtures.gtk_apps.calc_engine import KEYS

from .driver_session import DriverReply, DriverSession

pytestmark = [pytest.mark.desktop, pytest.mark.anyio]

TOKEN = re.compile(r"^s[0-9a-f]{8}:\d+$")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
WINDOW_LIMIT_S = 15.0


async def window_of(driver: DriverSession, app: AppHandle) -> dict[str, Any]:
    """The app's window as list_windows reports it, polled until the window manager lists it."""
    with anyio.fail_after(WINDOW_LIMIT_S):
        while True:
            reply = await driver.ok("list_windows", pid=app.pid)
            windows: list[dict[str, Any]] = [w for w in reply.structured["windows"] if w["title"] == app.title]
            if windows:
                return windows[0]
            await anyio.sleep(0.05)


async def capture(driver: DriverSession, window: dict[str, Any], **extra: Any) -> DriverReply:
    return await driver.ok(
        "get_window_state", pid=window["pid"], window_id=window["window_id"], tree_format="both", **extra
    )


def tokens_by_label(reply: DriverReply) -> dict[str, str]:
    return {e["label"]: e["element_token"] for e in reply.structured["elements"] if "label" in e}


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


async def test_driver_lists_the_calculator_window(desktop: Desktop, driver: DriverSession) -> None:
    calculator = desktop.app("calculator")
    assert driver.server_info["name"] == "cua-driver"

    window = await window_of(driver, calculator)
    assert window["app_name"] == "Calculator"
    assert window["is_on_screen"] is True
    assert window["bounds"]["width"] > 0 and window["bounds"]["height"] > 0

    apps = (await driver.ok("list_apps")).structured["apps"]
    assert any(app["pid"] == calculator.pid and app["running"] for app in apps)

    by_name = (await driver.ok("list_windows", app="Calculator")).structured["windows"]
    assert [(w["pid"], w["window_id"]) for w in by_name] == [(calculator.pid, window["window_id"])]


async def test_capture_returns_element_tokens_and_a_png(desktop: Desktop, driver: DriverSession) -> None:
    window = await window_of(driver, desktop.app("calculator"))
    reply = await capture(driver, window)
    state = reply.structured

    snapshot_id = state["snapshot_id"]
    assert state["window_id"] == window["window_id"]
    assert state["elements_complete"] is True
    for element in state["elements"]:
        assert TOKEN.match(element["element_token"])
        assert element["element_token"] == f"{snapshot_id}:{element['element_index']}"
    buttons = {e["label"] for e in state["elements"] if e["role"] == "push button"}
    assert buttons == set(KEYS)
    assert 'label = "0"' in state["tree_markdown"]

    assert [mime for mime, _ in reply.images] == ["image/png"]
    assert state["screenshot_mime_type"] == "image/png"
    assert png_size(reply.images[0][1]) == (state["screenshot_width"], state["screenshot_height"])
    assert (state["screenshot_width"], state["screenshot_height"]) == (
        window["bounds"]["width"],
        window["bounds"]["height"],
    )


async def test_clicking_tokens_computes_two_plus_three(desktop: Desktop, driver: DriverSession) -> None:
    calculator = desktop.app("calculator")
    window = await window_of(driver, calculator)
    tokens = tokens_by_label(await capture(driver, window))

    for label in ("2", "+", "3", "="):
        reply = await driver.ok("click", pid=window["pid"], window_id=window["window_id"], element_token=tokens[label])
        assert reply.structured["effect"] == "unverifiable"
        assert reply.structured["route"] == "accessibility"
        assert reply.structured["delivery"] == {"mode": "background"}

    state = await calculator.wait_for_state(lambda s: s["display"] == "5")
    assert state["presses"] == ["2", "+", "3", "="]
    assert state["result"] == 5
    assert state["history"] == ["2+3=5"]

    fresh = await capture(driver, window, include_screenshot=False)
    assert 'label = "5"' in fresh.structured["tree_markdown"]

    stale = await driver.call("click", pid=window["pid"], window_id=window["window_id"], element_token=tokens["C"])
    assert stale.is_error
    assert stale.structured["refusal"]["code"] == "stale_element_token"
    assert calculator.read_state()["presses"] == ["2", "+", "3", "="]


async def test_typing_into_the_form_by_token(desktop: Desktop, driver: DriverSession) -> None:
    form = desktop.app("form")
    window = await window_of(driver, form)
    elements = {e["label"]: e for e in (await capture(driver, window)).structured["elements"] if "label" in e}
    assert elements["Name"]["role"] == "text"
    assert elements["Notes"]["role"] == "text"
    target = {"pid": window["pid"], "window_id": window["window_id"]}

    typed = await driver.ok("type_text", **target, element_token=elements["Name"]["element_token"], text="Ada")
    assert typed.structured["effect"] == "confirmed"
    assert {"kind": "value_readback"} in [{"kind": e["kind"]} for e in typed.structured["evidence"]]
    await form.wait_for_state(lambda s: s["name"] == "Ada")

    replaced = await driver.ok(
        "set_value", **target, element_token=elements["Name"]["element_token"], value="Ada Lovelace"
    )
    assert replaced.structured["effect"] == "confirmed"
    await form.wait_for_state(lambda s: s["name"] == "Ada Lovelace")

    notes = await driver.ok(
        "set_value", **target, element_token=elements["Notes"]["element_token"], value="first line\nsecond"
    )
    assert notes.structured["effect"] == "confirmed"
    await form.wait_for_state(lambda s: s["notes"] == "first line\nsecond")

    await driver.ok("click", **target, element_token=elements["Subscribe"]["element_token"])
    await form.wait_for_state(lambda s: s["subscribe"] is True)
    await driver.ok("click", **target, element_token=elements["Submit"]["element_token"])
    state = await form.wait_for_state(lambda s: s["submit_count"] == 1)
    assert state["submissions"] == [{"name": "Ada Lovelace", "notes": "first line\nsecond", "subscribe": True}]


async def test_background_keys_are_refused_and_foreground_keys_land(desktop: Desktop, driver: DriverSession) -> None:
    calculator = desktop.app("calculator")
    window = await window_of(driver, calculator)
    target = {"pid": window["pid"], "window_id": window["window_id"]}
    await capture(driver, window, include_screenshot=False)

    refused = await driver.call("press_key", **target, key="7")
    assert refused.is_error
    assert refused.structured["code"] == "background_unavailable"
    assert refused.structured["escalation"]["recommended"] == "foreground"
    assert calculator.read_state()["presses"] == []

    landed = await driver.ok("press_key", **target, key="7", delivery_mode="foreground")
    assert landed.structured["delivery"]["mode"] == "foreground"
    assert landed.structured["route"] == "global_input"
    state = await calculator.wait_for_state(lambda s: s["presses"] != [])
    assert state["presses"] == ["7"]
    assert state["display"] == "7"
