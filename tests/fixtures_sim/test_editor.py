"""The text editor through the simulated driver: read-back typing, set_value, Bold, Save and hotkeys."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import EDITOR, SimClient, open_sim

pytestmark = pytest.mark.anyio


async def _editor_tokens(sim: SimClient) -> list[str]:
    read = await sim.call("get_window_state", **EDITOR, tree_format="elements")
    return [element["element_token"] for element in read.structured["elements"]]


async def test_typing_by_token_is_confirmed_by_read_back(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        title, _body, _bold, _save = await _editor_tokens(sim)
        typed = await sim.call("type_text", **EDITOR, element_token=title, text="Groceries")
        assert typed.structured["effect"] == "confirmed"
        assert [item["kind"] for item in typed.structured["evidence"]] == ["value_readback", "value_readback"]
        assert "hint" not in typed.structured
        assert typed.text.endswith("it reads back 'Groceries'.")
        assert sim.state()["texteditor"]["title"] == "Groceries"


async def test_set_value_then_focused_typing_inserts_at_the_caret(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        title, *_ = await _editor_tokens(sim)
        written = await sim.call("set_value", **EDITOR, element_token=title, value="world")
        assert written.structured["effect"] == "confirmed"
        assert written.structured["evidence"] == [{"kind": "value_readback"}]
        focused = await sim.call("type_text", **EDITOR, text="abc")
        assert focused.structured["effect"] == "unverifiable"
        assert focused.text == "Typed 3 character(s) (via AT-SPI)."
        assert sim.state()["texteditor"]["title"] == "abcworld"


async def test_bold_save_and_window_title(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        title, body, bold, save = await _editor_tokens(sim)
        await sim.call("type_text", **EDITOR, element_token=title, text="Notes")
        await sim.call("set_value", **EDITOR, element_token=body, value="line one\nline two")
        await sim.call("click", **EDITOR, element_token=bold)
        await sim.call("click", **EDITOR, element_token=save)
        state = sim.state()["texteditor"]
        assert (state["bold"], state["saved"], state["window_title"]) == (True, True, "Notes — saved")
        assert state["body"] == "line one\nline two"
        windows = await sim.call("list_windows", pid=EDITOR["pid"])
        assert windows.structured["windows"][0]["title"] == "Notes — saved"
        read = await sim.call("get_window_state", **EDITOR, tree_format="elements", include_screenshot=False)
        checkbox = read.structured["elements"][2]
        assert (checkbox["role"], checkbox["label"], checkbox["selected"]) == ("check box", "Bold", True)
        assert "screenshot_frame" not in checkbox
        assert read.structured["elements"][1]["value"] == "line one\nline two"


async def test_set_value_on_a_button_is_refused(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        *_, save = await _editor_tokens(sim)
        refused = await sim.call("set_value", **EDITOR, element_token=save, value="x")
        assert refused.code == "set_value_unavailable"
        assert refused.structured["effect"] == "none"
        assert refused.structured["escalation"]["recommended"] == "foreground"
        assert sim.journal() == []


async def test_hotkeys_need_foreground_and_then_act(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        title, *_ = await _editor_tokens(sim)
        await sim.call("type_text", **EDITOR, element_token=title, text="draft")
        background = await sim.call("hotkey", **EDITOR, keys=["ctrl", "a"])
        assert background.code == "background_unavailable"
        await sim.call("hotkey", **EDITOR, keys=["ctrl", "a"], delivery_mode="foreground")
        await sim.call("type_text", **EDITOR, text="final", delivery_mode="foreground")
        saved = await sim.call("hotkey", **EDITOR, keys=["cmd", "s"], delivery_mode="foreground")
        assert saved.structured["route"] == "global_input"
        state = sim.state()["texteditor"]
        assert (state["title"], state["saved"]) == ("final", True)
        kinds = [entry["kind"] for entry in sim.journal()]
        assert kinds == ["type", "hotkey", "type", "hotkey"]


async def test_type_text_into_a_button_is_refused_in_the_background(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        *_, save = await _editor_tokens(sim)
        refused = await sim.call("type_text", **EDITOR, element_token=save, text="5")
        assert refused.code == "background_unavailable"
        assert "uinput" in refused.structured["hint"]
