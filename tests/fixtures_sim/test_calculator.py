"""The calculator through the simulated driver: token clicks, stale tokens, diffs, pixels and keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import CALC, open_sim

pytestmark = pytest.mark.anyio


async def test_token_clicks_compute_two_plus_three(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        tokens = await sim.tokens(**CALC)
        for label in ("2", "+", "3", "="):
            result = await sim.call("click", **CALC, element_token=tokens[label])
            assert not result.is_error, result.text
            assert result.structured["effect"] == "unverifiable"
            assert result.structured["route"] == "accessibility"
            assert result.structured["delivery"] == {"mode": "background"}

        assert sim.state()["calculator"]["display"] == "5"
        read = await sim.call("get_window_state", **CALC, tree_format="both", include_screenshot=False)
        assert '- label = "5"' in read.structured["tree_markdown"]
        assert [entry["element"]["label"] for entry in sim.journal() if entry["element"]] == ["2", "+", "3", "="]
        assert {entry["delivery"] for entry in sim.journal()} == {"background"}


async def test_markdown_read_lists_rows_and_token_hint(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        result = await sim.call("get_window_state", **CALC)
        header, _, markdown = result.texts[0].partition("\n\n")
        snapshot = result.structured["snapshot_id"]
        assert header.startswith(f"window_id={CALC['window_id']} pid={CALC['pid']} elements=16 ")
        assert f'element_token for row [N] = {snapshot}:N (row [1] is "{snapshot}:1")' in header
        assert markdown.splitlines()[:3] == ['- frame = "Calculator"', '    - label = "0"',
                                             '      - [0] push button "7" [actions=[click]]']  # fmt: skip
        assert "elements" not in result.structured
        assert result.part_types == ["text", "image"]
        assert result.image_size() == (320, 400)


async def test_rereading_a_window_makes_its_old_tokens_stale(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        old = await sim.tokens(**CALC)
        second = await sim.call("get_window_state", **CALC, include_screenshot=False)
        new_snapshot = second.structured["snapshot_id"]
        assert second.structured["invalidated_snapshot_ids"] == [old["7"].split(":")[0]]

        refused = await sim.call("click", **CALC, element_token=old["7"], session="s1")
        assert refused.is_error
        assert refused.code == "stale_element_token"
        assert refused.structured["status"] == "refused"
        assert refused.structured["current_snapshots"] == [
            {"snapshot_id": new_snapshot, "window_id": CALC["window_id"]}
        ]
        assert refused.structured["next_call"] == {"arguments": {**CALC, "session": "s1"}, "tool": "get_window_state"}
        assert sim.journal() == []
        assert sim.state()["calculator"]["display"] == "0"


async def test_malformed_conflicting_and_out_of_range_tokens_fail_closed(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        tokens = await sim.tokens(**CALC)
        snapshot = tokens["7"].split(":")[0]

        malformed = await sim.call("click", **CALC, element_token="garbage")
        assert malformed.code == "invalid_element_token"
        assert "<snapshot_id>:<row>" in malformed.text

        never_minted = await sim.call("click", **CALC, element_token="s0000ffff:1")
        assert never_minted.code == "stale_element_token"

        out_of_range = await sim.call("click", **CALC, element_token=f"{snapshot}:99")
        assert out_of_range.code == "invalid_element_token"
        assert "[99]" in out_of_range.text

        conflicting = await sim.call("click", pid=CALC["pid"], window_id=6291459, element_token=tokens["7"])
        assert conflicting.code == "conflicting_element_target"
        assert sim.journal() == []


async def test_since_latest_reports_the_changed_display_row(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        tokens = await sim.tokens(**CALC)
        await sim.call("click", **CALC, element_token=tokens["9"])
        diff = await sim.call("get_window_state", **CALC, since="latest", include_screenshot=False)
        assert diff.structured["since_status"] == "diff"
        assert diff.structured["diff_counts"] == {"added": 0, "changed": 1, "removed": 0}
        assert diff.structured["tree_diff"].endswith('\n~ label = "9"')
        assert "tree_markdown" not in diff.structured


async def test_pixel_click_maps_screenshot_pixels_through_the_stored_ratio(tmp_path: Path) -> None:
    faults = [{"knob": "big_window", "app": "calculator", "width": 2200, "height": 1300},
              {"knob": "screen", "width": 2560, "height": 1600}]  # fmt: skip
    async with open_sim(tmp_path, faults=faults) as sim:
        read = await sim.call("get_window_state", **CALC, tree_format="elements")
        assert (read.structured["screenshot_width"], read.structured["screenshot_height"]) == (1394, 824)
        assert read.structured["frame_scale"] == pytest.approx(1394 / 2200)
        assert read.structured["screenshot_original_width"] == 2200
        assert read.image_size() == (1394, 824)
        four = next(element for element in read.structured["elements"] if element["label"] == "4")
        box = four["screenshot_frame"]
        result = await sim.call("click", **CALC, x=box["x"] + box["w"] / 2, y=box["y"] + box["h"] / 2)
        assert not result.is_error, result.text
        assert result.structured["route"] == "accessibility"
        assert sim.state()["calculator"]["display"] == "4"
        assert sim.journal()[-1]["element"] == {"index": 4, "key": "key:4", "role": "push button", "label": "4"}


async def test_background_pixel_click_on_no_control_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        await sim.call("get_window_state", **CALC)
        refused = await sim.call("click", **CALC, x=1, y=1, delivery_mode="sideways")
        assert refused.code == "background_unavailable"
        assert refused.structured["path"] == "background_unavailable_pointer"
        assert refused.structured["window_point"] == [1, 1]
        assert sim.journal() == []


async def test_pixel_click_before_any_read_needs_a_screenshot_context(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        refused = await sim.call("click", **CALC, x=40, y=120)
        assert refused.structured == {"code": "screenshot_context_missing", "pid": CALC["pid"],
                                      "reason": "window_never_read", "window_id": CALC["window_id"]}  # fmt: skip


async def test_keyboard_reaches_the_calculator_only_in_the_foreground(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        background = await sim.call("press_key", **CALC, key="7")
        assert background.code == "background_unavailable"
        assert len(background.texts) == 2
        typed = await sim.call("type_text", **CALC, text="6*7", delivery_mode="foreground")
        assert typed.structured["route"] == "global_input"
        enter = await sim.call("press_key", **CALC, key="return", delivery_mode="foreground")
        assert enter.structured["delivery"] == {"mode": "foreground"}
        state = sim.state()
        assert state["calculator"]["display"] == "42"
        assert state["frontmost_window_id"] == 6291459
        assert state["foreground_activations"] == 2
        entries = sim.journal()
        assert [(e["frontmost_before"], e["frontmost_during"], e["frontmost_after"]) for e in entries] == [
            (6291459, CALC["window_id"], 6291459)
        ] * 2


async def test_display_is_checkable_with_verify_state(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        tokens = await sim.tokens(**CALC)
        for label in ("8", "÷", "2", "="):
            await sim.call("click", **CALC, element_token=tokens[label])
        expect = [
            {"window": {"exists": True}},
            {"element": {"selector": {"role": "label"}, "value_equals": "4"}},
            {"element": {"selector": {"role": "push button"}}},
        ]
        verdict = await sim.call("verify_state", **CALC, expect=expect, timeout_ms=0)
        statuses = [(p["status"], p["unknown_reason"]) for p in verdict.structured["predicates"]]
        assert statuses == [("satisfied", None), ("satisfied", None), ("unknown", "multi_match")]
        assert verdict.structured["status"] == "unknown"
        assert verdict.structured["samples"] == 1
