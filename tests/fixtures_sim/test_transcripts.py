"""The fake checked against the recorded real transcripts (docs/cua-driver.md §10.5).

Each recorded step of `recorded/run{1,2,3}.jsonl` (cua-driver 0.37.0 under Xvfb, against GTK3 test windows)
is replayed as the same scenario on the fake desktop — the recorded ProbeCalc becomes the Calculator, ProbeEdit
the TextEditor, run 2's big and small windows are two Calculator windows (`big_window` and `ambiguous_pid`
knobs), its "most of the tree changed" re-read is taken on the TextEditor after an edit and a save — and the
fake's response must have the recorded structure: the same key sets, value types, content part types and the
same codes, effects, routes and statuses. Steps for tools the fake does not implement (run_steps, zoom,
check_permissions, get_guide) are listed in SKIPPED and checked to be exactly those.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .shapes import differences, shape
from .support import CALC, EDITOR, SimClient, open_sim

pytestmark = pytest.mark.anyio
JsonObject = dict[str, Any]
RECORDED = Path(__file__).with_name("recorded")
SKIPPED = {("run2", 12), ("run2", 20), ("run2", 21), ("run2", 22), ("run3", 1)}
RUN2_DESKTOP: list[JsonObject] = [
    {"knob": "screen", "width": 2560, "height": 1600},
    {"knob": "big_window", "app": "calculator", "width": 2200, "height": 1300},
    {"knob": "ambiguous_pid", "app": "calculator"},
]
SMALL_CALC = {"pid": CALC["pid"], "window_id": CALC["window_id"] + 16}


def recorded(run: str) -> list[JsonObject]:
    lines = (RECORDED / f"{run}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


class Replay:
    """Runs fake steps and keeps each raw response under the recorded step's index."""

    def __init__(self, sim: SimClient) -> None:
        self.sim = sim
        self.responses: dict[int, JsonObject] = {}

    async def call(self, index: int, tool: str, **arguments: Any) -> JsonObject:
        response = await self.sim.request("tools/call", {"name": tool, "arguments": arguments})
        self.responses[index] = response
        return response

    async def raw(self, index: int, method: str, params: JsonObject) -> None:
        self.responses[index] = await self.sim.request(method, params)


def structured(response: JsonObject) -> JsonObject:
    result: JsonObject = response["result"]["structuredContent"]
    return result


def element(response: JsonObject, label: str) -> JsonObject:
    return next(item for item in structured(response)["elements"] if item.get("label") == label)


def center(item: JsonObject) -> JsonObject:
    box = item["screenshot_frame"]
    return {"x": box["x"] + box["w"] / 2, "y": box["y"] + box["h"] / 2}


def assert_matches(run: str, replay: Replay) -> None:
    steps = recorded(run)
    compared = set(replay.responses)
    expected = {index for index, step in enumerate(steps) if (run, index) not in SKIPPED}
    assert compared == expected, f"{run}: steps not replayed {sorted(expected - compared)}"
    problems: list[str] = []
    for index in sorted(compared):
        real, fake = steps[index]["response"], replay.responses[index]
        where = f"{run}[{index}] {steps[index]['note'] or steps[index].get('method')}"
        found = differences(shape({k: v for k, v in real.items() if k != "id"}),
                            shape({k: v for k, v in fake.items() if k != "id"}))  # fmt: skip
        problems += [f"{where}: {problem}" for problem in found]
        if "result" in real and "content" in real["result"]:
            real_parts = [part["type"] for part in real["result"]["content"]]
            fake_parts = [part["type"] for part in fake["result"]["content"]]
            if real_parts != fake_parts:
                problems.append(f"{where}: content parts {fake_parts}, recorded {real_parts}")
    assert not problems, "\n".join(problems)


async def test_run1_observation_tokens_errors_and_sessions(tmp_path: Path) -> None:
    async with open_sim(tmp_path, initialize=False) as sim:
        replay = Replay(sim)
        replay.responses[0] = await sim.initialize()
        probe = {"session": "probe-1"}
        await replay.call(1, "start_session", **probe)
        await replay.call(2, "get_screen_size", **probe)
        await replay.call(3, "list_apps", **probe)
        await replay.call(4, "list_windows", **probe)
        await replay.call(5, "list_windows", app="python3", **probe)
        await replay.call(6, "get_window_state", **CALC, **probe)
        both = await replay.call(7, "get_window_state", **CALC, **probe, tree_format="both", include_screenshot=True)
        for index, label in zip(range(8, 12), ("1", "+", "2", "="), strict=True):
            await replay.call(index, "click", **CALC, element_token=element(both, label)["element_token"], **probe)
        snapshot = structured(both)["snapshot_id"]
        await replay.call(12, "get_window_state", **CALC, **probe, since=snapshot, include_screenshot=False)
        await replay.call(13, "click", **CALC, element_token=element(both, "1")["element_token"], **probe)
        await replay.call(14, "click", **CALC, element_index=1, **probe)
        await replay.call(15, "click", **CALC, element_token="s0000ffff:1", **probe)
        await replay.call(16, "click", **CALC, element_token="garbage", **probe)
        elements = await replay.call(17, "get_window_state", **CALC, **probe, tree_format="elements")
        await replay.call(18, "click", **CALC, **center(element(elements, "C")), **probe)
        await replay.call(19, "click", **CALC, x=5, y=5, delivery_mode="foreground", **probe)
        await replay.call(20, "click", **CALC, x=5, y=5, delivery_mode="sideways", **probe)
        selector = {"role": "push button", "label_contains": "="}
        expect = [{"window": {"exists": True}}, {"element": {"selector": selector, "exists": True}}]
        await replay.call(21, "verify_state", **CALC, expect=expect, timeout_ms=0, **probe)
        await replay.call(22, "get_window_state", pid=CALC["pid"], window_id=999999, **probe)
        await replay.call(23, "get_window_state", pid=999999, window_id=CALC["window_id"], **probe)
        await replay.call(24, "click", pid=CALC["pid"], window_id=999999, x=5, y=5, **probe)
        await replay.call(25, "bring_to_front", **CALC)
        await replay.call(26, "scroll", **CALC, direction="down", **probe)
        editor = await replay.call(27, "get_window_state", **EDITOR, **probe, tree_format="both")
        tokens = [item["element_token"] for item in structured(editor)["elements"]]
        await replay.call(28, "type_text", **EDITOR, element_token=tokens[0], text="hello", **probe)
        await replay.call(29, "set_value", **EDITOR, element_token=tokens[0], value="world", **probe)
        await replay.call(30, "type_text", **EDITOR, text="abc", **probe)
        await replay.call(31, "press_key", **EDITOR, key="return", **probe)
        await replay.call(32, "hotkey", **EDITOR, keys=["ctrl", "a"], **probe)
        await replay.call(33, "click", **EDITOR, element_token=tokens[2], **probe)
        await replay.call(34, "get_window_state", **EDITOR, **probe, tree_format="elements", include_screenshot=False)
        await replay.call(35, "get_desktop_state", **probe)
        await replay.call(36, "launch_app", name="definitely-not-an-app-xyz", **probe)
        await replay.call(37, "kill_app", pid=1, **probe)
        await replay.call(38, "nonexistent_tool")
        await replay.raw(39, "tools/call", {"arguments": {}})
        await replay.raw(40, "bogus/method", {})
        await replay.call(41, "health_report")
        await replay.call(42, "end_session", **probe)
        await replay.call(43, "list_windows", **probe)
        assert sim.state()["texteditor"]["title"] == "abcworld", "the recorded run typed 'abc' before 'world'"
    assert_matches("run1", replay)


async def test_run2_big_window_pixels_pid_only_and_foreground_keys(tmp_path: Path) -> None:
    async with open_sim(tmp_path, faults=RUN2_DESKTOP, initialize=False) as sim:
        replay = Replay(sim)
        replay.responses[0] = await sim.initialize()
        await replay.call(1, "get_screen_size")
        await replay.call(2, "list_windows", app="calc")
        await replay.call(3, "list_windows")
        await replay.call(4, "click", pid=CALC["pid"], x=10, y=10)
        big = await replay.call(5, "get_window_state", **CALC, tree_format="elements")
        assert structured(big)["screenshot_width"] == 1394
        await replay.call(6, "click", **CALC, **center(element(big, "4")))
        editor = await sim.call("get_window_state", **EDITOR, tree_format="elements")
        title, body, _bold, save = [item["element_token"] for item in editor.structured["elements"]]
        await sim.call("set_value", **EDITOR, element_token=title, value="todo")
        await sim.call("set_value", **EDITOR, element_token=body, value="milk")
        await sim.call("click", **EDITOR, element_token=save)
        await replay.call(7, "get_window_state", **EDITOR, since="latest", include_screenshot=False)
        small = await replay.call(8, "get_window_state", **SMALL_CALC, tree_format="elements", include_screenshot=False)
        one = element(small, "1")["element_token"]
        await replay.call(9, "click", **CALC, element_token=one)
        await replay.call(10, "click", pid=CALC["pid"], element_token=one)
        await replay.call(11, "click", pid=CALC["pid"], element_token=one)
        await replay.call(13, "type_text", **SMALL_CALC, text="+2", delivery_mode="foreground")
        await replay.call(14, "press_key", **SMALL_CALC, key="return", delivery_mode="foreground")
        await replay.call(15, "hotkey", **SMALL_CALC, keys=["ctrl", "a"], delivery_mode="foreground")
        await replay.call(16, "get_window_state", pid=CALC["pid"])
        await replay.call(
            17, "get_window_state", **SMALL_CALC, include_accessibility_tree=False, include_screenshot=False
        )
        await replay.call(18, "set_config", max_image_dimension=800)
        await replay.call(19, "get_config")
        assert sim.state()["calculator"]["display"] == "4"
        small_window = next(w for w in sim.state()["windows"] if w["window_id"] == SMALL_CALC["window_id"])
        assert small_window["document"]["display"] == "13"
    assert_matches("run2", replay)


async def test_run3_refused_background_routes_and_query(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        replay = Replay(sim)
        await replay.call(0, "list_windows")
        await sim.call("get_window_state", **CALC)
        calc = await replay.call(2, "get_window_state", **CALC, tree_format="elements", include_screenshot=True)
        await replay.call(3, "double_click", **CALC, element_token=element(calc, "1")["element_token"])
        await replay.call(4, "right_click", **CALC, element_token=element(calc, "2")["element_token"])
        again = await replay.call(5, "get_window_state", **CALC, tree_format="elements")
        clear = element(again, "C")["element_token"]
        await replay.call(6, "set_value", **CALC, element_token=clear, value="5")
        await replay.call(7, "type_text", **CALC, element_token=clear, text="5")
        await replay.call(8, "scroll", **CALC, element_token=clear, direction="down")
        await replay.call(9, "drag", **CALC, from_x=10, from_y=60, to_x=100, to_y=60)
        await replay.call(10, "list_windows", pid=CALC["pid"])
        await replay.call(11, "get_window_state", **CALC, query="=", tree_format="both", include_screenshot=False)
        assert sim.journal() == [], "every action of run 3 was refused"
    assert_matches("run3", replay)


async def test_pipelined_requests_are_answered_in_order(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        sent = [
            await sim.send_request("tools/call", {"name": "get_window_state", "arguments": {**CALC}}),
            await sim.send_request("tools/call", {"name": "list_windows", "arguments": {}}),
            await sim.send_request("tools/call", {"name": "get_screen_size", "arguments": {}}),
        ]
        answered = [(await sim.read_message())["id"] for _ in sent]
        assert answered == sent


def test_the_shape_comparison_catches_codes_keys_and_types() -> None:
    real = {"structuredContent": {"code": "stale_element_token", "pid": 1, "elements": [{"a": 1}, {"b": "x"}]}}
    same = {"structuredContent": {"code": "stale_element_token", "pid": 7, "elements": [{"b": "y", "a": 2}]}}
    assert differences(shape(real), shape(same)) == []
    other_code = {"structuredContent": {"code": "invalid_element_token", "pid": 1, "elements": []}}
    assert differences(shape(real), shape(other_code)) == [
        "$.structuredContent.code: recorded ['=\"stale_element_token\"'], fake ['=\"invalid_element_token\"']"
    ]
    missing_key = {"structuredContent": {"code": "stale_element_token", "elements": [{"a": "1"}]}}
    assert differences(shape(real), shape(missing_key)) == [
        "$.structuredContent: fake lacks ['pid']",
        "$.structuredContent.elements[]: fake lacks ['b']",
        "$.structuredContent.elements[].a: recorded ['number'], fake ['str']",
    ]
