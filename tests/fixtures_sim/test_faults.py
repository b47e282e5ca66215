"""Every fault knob, observed through the wire, the journal and the state file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.cua_driver_sim import command

from .support import CALC, EDITOR, SimClient, open_sim

pytestmark = pytest.mark.anyio
NO_ANSWER_WINDOW = 0.5


async def _no_answer(sim: SimClient) -> bool:
    """True when nothing arrives on stdout within a short bounded window."""
    with anyio.move_on_after(NO_ANSWER_WINDOW) as scope:
        await sim.stdout.receive_until(b"\n", 1 << 20)
    return scope.cancelled_caught


async def _click_seven(sim: SimClient) -> int:
    tokens = await sim.tokens(**CALC)
    return await sim.send_request("tools/call", {"name": "click", "arguments": {**CALC, "element_token": tokens["7"]}})


async def test_timeout_after_perform_never_answers_but_the_click_landed(tmp_path: Path) -> None:
    faults = [{"knob": "timeout_after_perform", "tool": "click", "delay": "never"}]
    async with open_sim(tmp_path, faults=faults) as sim:
        await _click_seven(sim)
        assert await _no_answer(sim)
        await sim.send_request("tools/list")
        assert await _no_answer(sim), "a wedged connection answers nothing after the hang"
        await sim.stdin.aclose()
        assert await sim.wait_exit() == 0
        # Read once it has exited: all it did is written, however slowly it ran (the window times only silence).
        assert sim.state()["calculator"]["display"] == "7"
        assert [entry["kind"] for entry in sim.journal()] == ["click"]


async def test_timeout_after_perform_with_a_delay_answers_late(tmp_path: Path) -> None:
    faults = [{"knob": "timeout_after_perform", "tool": "click", "delay": 2.0}]
    async with open_sim(tmp_path, faults=faults) as sim:
        request_id = await _click_seven(sim)
        assert await _no_answer(sim)
        late = await sim.read_message()
        assert sim.state()["calculator"]["display"] == "7", "applied before the late answer"
        assert late["id"] == request_id
        assert late["result"]["structuredContent"]["effect"] == "unverifiable"


async def test_timeout_before_perform_never_applies_the_input(tmp_path: Path) -> None:
    faults = [{"knob": "timeout_before_perform", "tool": "click", "delay": "never"}]
    async with open_sim(tmp_path, faults=faults) as sim:
        await _click_seven(sim)
        assert await _no_answer(sim)
        await sim.stdin.aclose()
        assert await sim.wait_exit() == 0
        assert sim.journal() == []
        assert sim.state()["calculator"]["display"] == "0"


@pytest.mark.parametrize(("when", "journaled"), [("before", 0), ("after", 1)])
async def test_drop_transport_exits_without_answering(tmp_path: Path, when: str, journaled: int) -> None:
    faults = [{"knob": "drop_transport", "tool": "click", "when": when}]
    async with open_sim(tmp_path, faults=faults) as sim:
        await _click_seven(sim)
        with pytest.raises(anyio.IncompleteRead):
            await sim.read_line()
        assert sim.stdout.buffer == b""
        assert await sim.wait_exit() == 3
        assert len(sim.journal()) == journaled
        assert sim.state()["calculator"]["display"] == ("7" if journaled else "0")
        assert b"drop_transport" in sim.stderr()


async def test_drop_transport_mid_write_leaves_half_a_frame(tmp_path: Path) -> None:
    faults = [{"knob": "drop_transport", "tool": "click", "when": "mid_write"}]
    async with open_sim(tmp_path, faults=faults) as sim:
        await _click_seven(sim)
        with pytest.raises(anyio.IncompleteRead):
            await sim.read_line()
        partial = sim.stdout.buffer
        assert partial.startswith(b'{"jsonrpc":"2.0"')
        assert not partial.endswith(b"\n")
        assert await sim.wait_exit() == 3
        assert len(sim.journal()) == 1


async def test_stale_token_bumps_the_snapshot_behind_the_clients_back(tmp_path: Path) -> None:
    faults = [{"knob": "stale_token", "nth": 1}]
    async with open_sim(tmp_path, faults=faults) as sim:
        tokens = await sim.tokens(**CALC)
        refused = await sim.call("click", **CALC, element_token=tokens["7"])
        assert refused.code == "stale_element_token"
        hidden = refused.structured["current_snapshots"][0]["snapshot_id"]
        assert hidden != tokens["7"].split(":")[0]
        fresh = await sim.tokens(**CALC)
        assert not (await sim.call("click", **CALC, element_token=fresh["7"])).is_error
        assert sim.state()["calculator"]["display"] == "7"


async def test_window_closes_between_snapshot_and_action(tmp_path: Path) -> None:
    faults = [{"knob": "window_closes", "tool": "click"}]
    async with open_sim(tmp_path, faults=faults) as sim:
        tokens = await sim.tokens(**CALC)
        failed = await sim.call("click", **CALC, element_token=tokens["7"])
        assert failed.code == "tool_invocation_failed"
        assert "is stale or no longer running" in failed.text
        windows = await sim.call("list_windows")
        assert CALC["window_id"] not in {window["window_id"] for window in windows.structured["windows"]}
        assert CALC["window_id"] not in {window["window_id"] for window in sim.state()["windows"]}
        assert sim.journal() == []


async def test_hidpi_scale_doubles_the_screenshot_and_maps_pixels_back(tmp_path: Path) -> None:
    faults = [{"knob": "hidpi_scale", "scale": 2.0}]
    async with open_sim(tmp_path, faults=faults) as sim:
        screen = await sim.call("get_screen_size")
        assert screen.structured == {"height": 800, "scale_factor": 2.0, "width": 1280}
        read = await sim.call("get_window_state", **CALC, tree_format="elements")
        assert read.image_size() == (640, 800)
        assert read.structured["screenshot_scale"] == 2.0
        eight = next(element for element in read.structured["elements"] if element["label"] == "8")
        assert eight["screenshot_frame"]["x"] == 2 * (eight["frame"]["x"] - 880)
        box = eight["screenshot_frame"]
        await sim.call("click", **CALC, x=box["x"] + box["w"] / 2, y=box["y"] + box["h"] / 2)
        assert sim.state()["calculator"]["display"] == "8"


async def test_hidpi_scale_can_misreport_the_scale_factor(tmp_path: Path) -> None:
    faults = [{"knob": "hidpi_scale", "scale": 2.0, "report_scale": 1.0}]
    async with open_sim(tmp_path, faults=faults) as sim:
        screen = await sim.call("get_screen_size")
        desktop = await sim.call("get_desktop_state", max_image_dimension=0)
        assert screen.structured["scale_factor"] == 1.0
        assert desktop.image_size() == (2560, 1600)
        assert desktop.part_types == ["image", "text"]


async def test_max_image_dimension_downscales_and_clicks_still_land(tmp_path: Path) -> None:
    faults = [{"knob": "max_image_dimension", "value": 200}]
    async with open_sim(tmp_path, faults=faults) as sim:
        read = await sim.call("get_window_state", **CALC, tree_format="elements")
        assert read.image_size() == (160, 200)
        assert read.structured["frame_scale"] == 0.5
        three = next(element for element in read.structured["elements"] if element["label"] == "3")
        box = three["screenshot_frame"]
        await sim.call("click", **CALC, x=box["x"] + box["w"] / 2, y=box["y"] + box["h"] / 2)
        assert sim.state()["calculator"]["display"] == "3"


async def test_duplicate_delivery_fires_one_click_twice(tmp_path: Path) -> None:
    faults = [{"knob": "duplicate_delivery", "tool": "click", "nth": 1}]
    async with open_sim(tmp_path, faults=faults) as sim:
        tokens = await sim.tokens(**CALC)
        result = await sim.call("click", **CALC, element_token=tokens["7"])
        assert result.structured["effect"] == "unverifiable"
        await sim.call("click", **CALC, element_token=tokens["1"])
        entries = sim.journal()
        assert [entry["element"]["label"] for entry in entries if entry["element"]] == ["7", "7", "1"]
        assert entries[0]["request_id"] == entries[1]["request_id"]
        assert sim.state()["calculator"]["display"] == "771"


async def test_background_unavailable_per_tool_and_app(tmp_path: Path) -> None:
    faults = [{"knob": "background_unavailable", "tool": "click", "app": "calculator"}]
    async with open_sim(tmp_path, faults=faults) as sim:
        calc_tokens = await sim.tokens(**CALC)
        refused = await sim.call("click", **CALC, element_token=calc_tokens["7"])
        assert refused.code == "background_unavailable"
        assert refused.structured["escalation"]["recommended"] == "foreground"
        editor = await sim.call("get_window_state", **EDITOR, tree_format="elements", include_screenshot=False)
        bold = editor.structured["elements"][2]["element_token"]
        assert not (await sim.call("click", **EDITOR, element_token=bold)).is_error
        forced = await sim.call("click", **CALC, element_token=calc_tokens["7"], delivery_mode="foreground")
        assert forced.structured["route"] == "global_input"
        assert [(entry["app"], entry["delivery"]) for entry in sim.journal()] == [
            ("texteditor", "background"),
            ("calculator", "foreground"),
        ]


async def test_degraded_tree_has_no_elements_but_a_screenshot(tmp_path: Path) -> None:
    faults = [{"knob": "degraded_tree", "nth": 1}]
    async with open_sim(tmp_path, faults=faults) as sim:
        read = await sim.call("get_window_state", **CALC, tree_format="both")
        assert read.structured["degraded"] is True
        assert read.structured["degraded_reason"].startswith("atspi_tree_empty")
        assert read.structured["escalation"] == {"reason": read.structured["escalation"]["reason"], "recommended": "px"}
        assert read.structured["elements"] == []
        assert read.structured["elements_complete"] is False
        assert read.image_size() == (320, 400)
        again = await sim.call("get_window_state", **CALC, tree_format="elements", include_screenshot=False)
        assert len(again.structured["elements"]) == 16


async def test_suspected_noop_delivers_without_effect(tmp_path: Path) -> None:
    faults = [{"knob": "suspected_noop", "tool": "click"}]
    async with open_sim(tmp_path, faults=faults) as sim:
        tokens = await sim.tokens(**CALC)
        result = await sim.call("click", **CALC, element_token=tokens["7"])
        assert result.structured["effect"] == "suspected_noop"
        assert result.structured["escalation"] == {"reason": "suspected_noop", "target": "pixel"}
        assert sim.state()["calculator"]["display"] == "0"
        assert [entry["applied"] for entry in sim.journal()] == [False]


async def test_slow_walk_and_truncation(tmp_path: Path) -> None:
    faults = [{"knob": "slow_walk_ms", "ms": 40}, {"knob": "truncate_at", "count": 3}]
    async with open_sim(tmp_path, faults=faults) as sim:
        read = await sim.call("get_window_state", **CALC, tree_format="both", include_screenshot=False)
        assert " walk_ms=40 " in read.texts[0]
        assert len(read.structured["elements"]) == 3
        assert read.structured["truncated"] is True
        assert read.structured["truncation_reason"] == "timeout"
        assert read.structured["elements_complete"] is False
        assert read.structured["total_element_count"] == 16
        assert read.structured["returned_element_count"] == 3


async def test_session_expiry_then_revival(tmp_path: Path) -> None:
    faults = [{"knob": "session_expiry", "tool": "list_windows", "nth": 1}]
    async with open_sim(tmp_path, faults=faults) as sim:
        started = await sim.call("start_session", session="hermes-1")
        assert started.structured["revived"] is False
        ended = await sim.call("list_windows", session="hermes-1")
        assert ended.code == "session_ended"
        assert ended.structured["next_call"] == {"arguments": {"session": "hermes-1"}, "tool": "start_session"}
        revived = await sim.call("start_session", session="hermes-1")
        assert revived.structured["revived"] is True
        assert not (await sim.call("list_windows", session="hermes-1")).is_error


async def test_garbage_line_precedes_the_answer(tmp_path: Path) -> None:
    faults = [{"knob": "garbage_line", "tool": "list_apps", "text": "not json at all"}]
    async with open_sim(tmp_path, faults=faults) as sim:
        request_id = await sim.send_request("tools/call", {"name": "list_apps", "arguments": {}})
        assert await sim.read_line() == b"not json at all"
        assert (await sim.read_message())["id"] == request_id


async def test_garbage_line_at_startup_comes_before_initialize(tmp_path: Path) -> None:
    faults = [{"knob": "garbage_line", "at": "startup"}]
    async with open_sim(tmp_path, faults=faults, initialize=False) as sim:
        await sim.send_request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
        assert b"warming up" in await sim.read_line()
        assert (await sim.read_message())["result"]["protocolVersion"] == "2025-06-18"


async def test_stderr_noise_is_written_and_answers_still_come(tmp_path: Path) -> None:
    faults = [{"knob": "stderr_noise", "tool": "get_screen_size", "bytes": 200_000}]
    async with open_sim(tmp_path, faults=faults) as sim:
        assert not (await sim.call("get_screen_size")).is_error
        assert len(sim.stderr()) >= 190_000
        assert b"cua_driver::atspi" in sim.stderr()


async def test_eagain_and_permission_denied_refuse_without_delivering(tmp_path: Path) -> None:
    faults = [{"knob": "eagain", "tool": "click", "nth": 1}, {"knob": "permission_denied", "tool": "click", "nth": 2}]
    async with open_sim(tmp_path, faults=faults) as sim:
        tokens = await sim.tokens(**CALC)
        transient = await sim.call("click", **CALC, element_token=tokens["7"])
        assert transient.code == "tool_invocation_failed"
        assert "Resource temporarily unavailable (os error 35)" in transient.text
        denied = await sim.call("click", **CALC, element_token=tokens["7"])
        assert denied.code == "permission_denied"
        assert "Do not retry" in denied.structured["hint"]
        third = await sim.call("click", **CALC, element_token=tokens["7"])
        assert not third.is_error
        assert len(sim.journal()) == 1


async def test_uinput_grants_background_keyboard(tmp_path: Path) -> None:
    async with open_sim(tmp_path, faults=[{"knob": "uinput"}]) as sim:
        for key in ("9", "plus", "1", "return"):
            result = await sim.call("press_key", **CALC, key=key)
            assert result.structured["route"] == "synthetic_events", result.text
        assert sim.state()["calculator"]["display"] == "10"
        assert sim.state()["foreground_activations"] == 0


async def test_a_bad_fault_plan_stops_the_driver_at_start(tmp_path: Path) -> None:
    argv, env = command(faults=[{"knob": "no_such_knob"}])
    with anyio.fail_after(20):
        result = await anyio.run_process(argv, env=env, check=False, input=b"")
    assert result.returncode == 2
    assert b"unknown fault knob 'no_such_knob'" in result.stderr


async def test_a_respawned_driver_resumes_the_desktop_but_not_the_tokens(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as first:
        tokens = await first.tokens(**CALC)
        await first.call("click", **CALC, element_token=tokens["4"])
    async with open_sim(tmp_path) as second:
        assert second.state()["calculator"]["display"] == "4"
        stale = await second.call("click", **CALC, element_token=tokens["2"])
        assert stale.code == "stale_element_token"
        fresh: dict[str, Any] = await second.tokens(**CALC)
        assert fresh["2"].split(":")[0] > tokens["2"].split(":")[0]


async def test_a_fault_plan_file_through_the_environment(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"faults": [{"knob": "eagain", "tool": "get_screen_size"}]}))
    argv, env = command()
    env["FAKE_CUA_FAULTS"] = os.fspath(plan)
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_screen_size", "arguments": {}}},
    ]
    stdin = "".join(json.dumps(request) + "\n" for request in requests).encode()
    with anyio.fail_after(20):
        done = await anyio.run_process(argv, env=env, input=stdin, cwd=os.fspath(tmp_path))
    answer = json.loads(done.stdout.splitlines()[1])
    assert answer["result"]["isError"] is True
    assert "os error 35" in answer["result"]["content"][0]["text"]
