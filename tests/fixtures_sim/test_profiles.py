"""The three driver surfaces: what tools/list advertises and how each profile addresses elements."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures.cua_driver_sim import SECOND_EDITOR_WINDOW_ID
from fixtures.cua_driver_sim.catalog import RECORDED_TOOLS

from .support import CALC, EDITOR, open_sim

pytestmark = pytest.mark.anyio
IMPLEMENTED = {
    "list_apps", "list_windows", "get_window_state", "verify_state", "launch_app", "kill_app", "bring_to_front",
    "click", "double_click", "right_click", "drag", "type_text", "press_key", "hotkey", "set_value", "scroll",
    "get_screen_size", "get_desktop_state", "get_cursor_position", "set_agent_cursor_enabled", "health_report",
    "get_config", "set_config", "start_session", "end_session",
}  # fmt: skip


async def test_0_37_serves_the_recorded_schemas(tmp_path: Path) -> None:
    recorded = {tool["name"]: tool for tool in json.loads(Path(RECORDED_TOOLS).read_text())["tools"]}
    async with open_sim(tmp_path) as sim:
        listing = (await sim.request("tools/list"))["result"]
        assert (listing["capability_version"], listing["schema_version"]) == ("1", "1")
        assert listing["enforcement_adapters"] == []
        tools = {tool["name"]: tool for tool in listing["tools"]}
        assert set(tools) == IMPLEMENTED
        for name, tool in tools.items():
            for key in ("inputSchema", "outputSchema", "capabilities", "risk", "annotations"):
                assert tool.get(key) == recorded[name].get(key), (name, key)
        click = tools["click"]["inputSchema"]["properties"]
        assert click["element_token"]["pattern"] == "^s[0-9a-f]{8}:[0-9]+$"
        assert "element_index" not in click
        assert "screenshot" not in tools


async def test_0_37_initialize_and_extra_methods(tmp_path: Path) -> None:
    async with open_sim(tmp_path, initialize=False) as sim:
        init = (await sim.initialize())["result"]
        assert init["protocolVersion"] == "2025-06-18"
        assert init["serverInfo"] == {"name": "cua-driver", "version": "0.37.0"}
        assert init["capabilities"] == {"extensions": {"io.modelcontextprotocol/skills": {}}, "resources": {},
                                        "tools": {}}  # fmt: skip
        assert (await sim.request("ping"))["result"] == {}
        resources = (await sim.request("resources/list"))["result"]["resources"]
        assert [resource["uri"] for resource in resources] == ["skill://cua-driver/SKILL.md"]


async def test_0_2x_schema_shapes(tmp_path: Path) -> None:
    async with open_sim(tmp_path, profile="0.2x", initialize=False) as sim:
        init = (await sim.initialize())["result"]
        assert init["serverInfo"]["version"] == "0.23.0"
        assert init["capabilities"] == {"tools": {}}
        tools = await sim.tools()
        click = tools["click"]["inputSchema"]["properties"]
        assert click["element_index"] == {"type": "integer", "minimum": 0}
        assert click["snapshot_id"] == {"type": "string"}
        assert click["element_token"] == {"type": "string"}
        state_schema = tools["get_window_state"]["inputSchema"]
        assert state_schema["required"] == ["pid", "window_id"]
        assert not {"tree_format", "since"} & state_schema["properties"].keys()
        assert "app" not in tools["list_windows"]["inputSchema"]["properties"]
        assert "accessibility.element_tokens" not in tools["click"]["capabilities"]
        assert "hint" not in tools["click"]["outputSchema"]["anyOf"][0]["properties"]
        ping = await sim.request("ping")
        assert ping["error"] == {"code": -32601, "message": "Unknown method: ping"}


async def test_0_2x_element_index_needs_its_snapshot(tmp_path: Path) -> None:
    async with open_sim(tmp_path, profile="0.2x") as sim:
        read = await sim.call("get_window_state", **CALC)
        assert "elements" in read.structured
        assert "tree_markdown" in read.structured
        assert "tree_format" not in read.structured
        snapshot = read.structured["snapshot_id"]

        bare = await sim.call("click", **CALC, element_index=12)
        assert bare.code == "snapshot_id_required"
        lone = await sim.call("click", **CALC, snapshot_id=snapshot)
        assert lone.code == "element_index_required"
        bad = await sim.call("click", **CALC, element_index=12, snapshot_id="nope")
        assert bad.code == "invalid_snapshot_id"

        clicked = await sim.call("click", **CALC, element_index=12, snapshot_id=snapshot)
        assert clicked.structured == {"delivery": {"mode": "background"}, "effect": "unverifiable",
                                      "route": "accessibility"}  # fmt: skip
        assert sim.state()["calculator"]["display"] == "0"
        assert sim.journal()[0].get("element") == {"index": 12, "key": "key:C", "role": "push button", "label": "C"}


async def test_0_2x_pid_only_target_with_two_windows_is_ambiguous(tmp_path: Path) -> None:
    async with open_sim(tmp_path, profile="0.2x", faults=[{"knob": "ambiguous_pid"}]) as sim:
        refused = await sim.call("press_key", pid=EDITOR["pid"], key="a")
        assert refused.code == "ambiguous_window_target"
        assert refused.structured["effect"] == "refused"
        candidates = {candidate["window_id"] for candidate in refused.structured["candidates"]}
        assert candidates == {EDITOR["window_id"], SECOND_EDITOR_WINDOW_ID}


async def test_0_37_pid_only_target_resolves_to_the_frontmost_window(tmp_path: Path) -> None:
    async with open_sim(tmp_path, faults=[{"knob": "ambiguous_pid"}]) as sim:
        refused = await sim.call("click", pid=EDITOR["pid"], x=10, y=10)
        assert refused.code == "screenshot_context_missing"
        assert refused.structured["resolved_window"] == {"title": "Untitled 2", "transient_for": None,
                                                         "window_id": SECOND_EDITOR_WINDOW_ID}  # fmt: skip
        read = await sim.call("get_window_state", pid=EDITOR["pid"], include_screenshot=False)
        assert read.structured["window_id"] == SECOND_EDITOR_WINDOW_ID


async def test_legacy_surface_and_results(tmp_path: Path) -> None:
    async with open_sim(tmp_path, profile="legacy", initialize=False) as sim:
        assert (await sim.initialize())["result"]["serverInfo"]["version"] == "0.14.0"
        listing = (await sim.request("tools/list"))["result"]
        assert set(listing) == {"tools"}
        tools = {tool["name"]: tool for tool in listing["tools"]}
        assert "screenshot" in tools
        for tool in tools.values():
            assert not {"capabilities", "risk", "outputSchema"} & tool.keys(), tool["name"]
        click = tools["click"]["inputSchema"]["properties"]
        assert "element_index" in click
        assert not {"element_token", "snapshot_id", "delivery_mode"} & click.keys()

        read = await sim.call("get_window_state", **CALC)
        assert "snapshot_id" not in read.structured
        assert all("element_token" not in element for element in read.structured["elements"])
        clicked = await sim.call("click", **CALC, element_index=13)
        assert clicked.structured == {"effect": "unverifiable", "path": "x11_atspi", "verified": False}
        assert sim.state()["calculator"]["display"] == "0"
        shot = await sim.call("screenshot", window_id=CALC["window_id"], format="jpeg")
        assert shot.image_size() == (320, 400)


async def test_legacy_index_follows_the_latest_read_silently(tmp_path: Path) -> None:
    async with open_sim(tmp_path, profile="legacy") as sim:
        no_read = await sim.call("click", **CALC, element_index=0)
        assert no_read.is_error
        await sim.call("get_window_state", **CALC)
        await sim.call("get_window_state", **CALC)
        clicked = await sim.call("click", **CALC, element_index=0)
        assert not clicked.is_error
        assert sim.state()["calculator"]["display"] == "7"


async def test_0_37_rejects_unknown_arguments_but_not_odd_delivery_modes(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        unknown = await sim.call("click", **CALC, element_index=1)
        assert unknown.code == "invalid_arguments"
        assert unknown.text == (
            "click: unknown argument element_index; accepted: button, capture_id, coordinate_frame, count, cursor_id, "
            "delivery_mode, element_token, from_zoom, modifier, pid, scope, target, window_id, x, y"
        )
        wrong_type = await sim.call("scroll", **CALC, direction="down", amount="3")
        assert wrong_type.code == "invalid_arguments"
        missing = await sim.call("drag", **CALC, from_x=1, from_y=1, to_x=2)
        assert missing.text == "drag: missing required argument to_y"
        tokens = await sim.tokens(**CALC)
        odd = await sim.call("click", **CALC, element_token=tokens["1"], delivery_mode="auto")
        assert odd.structured["delivery"] == {"mode": "background"}
