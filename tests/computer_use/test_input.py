"""Input actions against the simulated driver: sticky target and its guard, element tokens and staleness,
transport success kept apart from effect with a verdict, foreground handling and capture_after."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.cua_driver_sim import CALCULATOR_WINDOW_ID, TEXT_EDITOR_WINDOW_ID
from hermes_acp.core import ImagePart

from .support import open_desk, payload

pytestmark = pytest.mark.anyio


async def test_input_goes_to_the_captured_target_not_the_frontmost_window(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        labels = await desk.capture("Calculator")
        for key in ("2", "+", "3", "="):
            outcome = await desk.act(action="click", element=labels[key])
            assert not outcome.failed
        journal, state = desk.journal(), desk.state()
    assert {entry["window_id"] for entry in journal} == {CALCULATOR_WINDOW_ID}
    assert state["frontmost_window_id"] == TEXT_EDITOR_WINDOW_ID
    assert state["calculator"]["display"] == "5"


async def test_app_on_an_input_action_that_disagrees_is_input_target_mismatch(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        labels = await desk.capture("Calculator")
        wrong = await desk.act(action="click", element=labels["7"], app="TextEditor")
        right = await desk.act(action="click", element=labels["7"], app="calculator")
        journal = desk.journal()
    body = payload(wrong)
    assert wrong.failed and body["code"] == "input_target_mismatch" and "capture(app='TextEditor')" in body["message"]
    assert body["verdict"]["decision"] == "verify_fresh_state"
    assert not right.failed and len(journal) == 1


async def test_element_tokens_from_the_latest_snapshot_are_sent(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        await desk.capture("Calculator")
        labels = await desk.capture("Calculator")  # a second read mints new tokens and voids the first ones
        await desk.act(action="click", element=labels["9"])
        journal = desk.journal()
    token = journal[0].get("element_token")
    assert token is not None and token.startswith("s00000002:"), "the second read's token"
    assert journal[0]["element"] is not None and journal[0]["element"]["label"] == "9"


async def test_a_stale_token_gives_a_clear_error_that_advises_a_new_capture(tmp_path: Path) -> None:
    async with open_desk(tmp_path, faults=[{"knob": "stale_token", "nth": 1}]) as desk:
        labels = await desk.capture("Calculator")
        stale = await desk.act(action="click", element=labels["4"])
        labels = await desk.capture("Calculator")
        retried = await desk.act(action="click", element=labels["4"])
        state = desk.state()
    body = payload(stale)
    assert stale.failed and body["code"] == "stale_element_token"
    assert "get_window_state again" in body["message"] or "Read the window again" in body.get("hint", "")
    assert body["verdict"]["decision"] == "verify_fresh_state" and "Capture again" in body["verdict"]["next"]
    assert not retried.failed and state["calculator"]["display"] == "4"


async def test_typing_by_element_is_confirmed_and_the_verdict_is_done(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        labels = await desk.capture("TextEditor")
        body = payload(await desk.act(action="type", element=labels.get("", 0), text="hello"))
        state = desk.state()
    assert (body["ok"], body["effect"], body["verdict"]["decision"]) == (True, "confirmed", "done")
    assert state["texteditor"]["title"] == "hello"


async def test_an_ok_click_that_nothing_confirmed_asks_for_fresh_state(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        labels = await desk.capture("Calculator")
        body = payload(await desk.act(action="click", element=labels["1"]))
    assert (body["ok"], body["effect"], body["verdict"]["decision"]) == (True, "unverifiable", "verify_fresh_state")


async def test_a_suspected_noop_escalates_to_pixels(tmp_path: Path) -> None:
    async with open_desk(tmp_path, faults=[{"knob": "suspected_noop", "tool": "click"}]) as desk:
        labels = await desk.capture("Calculator")
        body = payload(await desk.act(action="click", element=labels["1"]))
    assert body["ok"] is True and body["effect"] == "suspected_noop"
    assert (body["verdict"]["decision"], body["verdict"]["recommended"]) == ("escalate", "px")


async def test_a_background_refusal_escalates_to_foreground_and_a_permission_refusal_is_deny(tmp_path: Path) -> None:
    faults = [{"knob": "permission_denied", "tool": "click"}]
    async with open_desk(tmp_path, faults=faults) as desk:
        labels = await desk.capture("Calculator")
        refused = payload(await desk.act(action="key", keys="ctrl+a"))
        denied = payload(await desk.act(action="click", element=labels["1"]))
    assert (refused["ok"], refused["code"]) == (False, "background_unavailable")
    assert (refused["verdict"]["decision"], refused["verdict"]["recommended"]) == ("escalate", "foreground")
    assert (denied["verdict"]["decision"], denied["verdict"]["retryable"]) == ("deny", False)


async def test_foreground_delivery_is_sent_when_the_driver_accepts_it(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        await desk.capture("Calculator")
        outcome = await desk.act(action="key", keys="7", delivery_mode="foreground")
        journal, state = desk.journal(), desk.state()
    assert not outcome.failed and journal[0]["delivery"] == "foreground"
    assert state["calculator"]["display"] == "7"


async def test_foreground_asked_of_a_driver_without_delivery_mode_is_refused_never_downgraded(tmp_path: Path) -> None:
    async with open_desk(tmp_path, profile="legacy") as desk:
        labels = await desk.capture("Calculator")
        outcome = await desk.act(action="click", element=labels["1"], delivery_mode="foreground")
        journal = desk.journal()
    body = payload(outcome)
    assert outcome.failed and body["code"] == "foreground_unsupported" and body["verdict"]["decision"] == "deny"
    assert journal == []


@pytest.mark.parametrize("profile", ["0.2x", "legacy"])
async def test_older_drivers_are_addressed_the_way_their_schemas_say(tmp_path: Path, profile: str) -> None:
    async with open_desk(tmp_path, profile=profile) as desk:
        labels = await desk.capture("Calculator")
        for key in ("6", "×", "7", "="):
            assert not (await desk.act(action="click", element=labels[key])).failed
        state = desk.state()
    assert state["calculator"]["display"] == "42"


async def test_no_capture_after_a_failed_action_and_one_after_a_delivered_one(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        labels = await desk.capture("Calculator")
        failed = await desk.act(action="key", keys="ctrl+a", capture_after=True)
        delivered = await desk.act(action="click", element=labels["8"], capture_after=True)
    assert failed.failed and not any(isinstance(p, ImagePart) for p in failed.parts)
    assert payload(failed)["capture_after"].startswith("skipped")
    assert any(isinstance(p, ImagePart) for p in delivered.parts)
    assert payload(delivered)["capture_after"]["target"]["app"] == "Calculator"


async def test_verify_state_checks_the_sticky_target(tmp_path: Path) -> None:
    expect = [{"element": {"selector": {"role": "label"}, "value_equals": "5"}}]
    async with open_desk(tmp_path) as desk:
        labels = await desk.capture("Calculator")
        before = payload(await desk.act(action="verify_state", expect=expect))
        for key in ("2", "+", "3", "="):
            await desk.act(action="click", element=labels[key])
        after = payload(await desk.act(action="verify_state", expect=expect))
    assert (before["satisfied"], after["satisfied"]) == (False, True)


async def test_focus_app_binds_and_raises_only_when_asked(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        bound = payload(await desk.act(action="focus_app", app="Calculator"))
        front_before = desk.state()["frontmost_window_id"]
        raised = payload(await desk.act(action="focus_app", app="Calculator", raise_window=True))
        front_after = desk.state()["frontmost_window_id"]
    assert bound["target"]["window_id"] == CALCULATOR_WINDOW_ID and "raised" not in bound
    assert front_before == TEXT_EDITOR_WINDOW_ID and raised["raised"] is True and front_after == CALCULATOR_WINDOW_ID
