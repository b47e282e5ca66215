"""Pure pieces: what a driver accepts (by schema, never by version), the verdict table, geometry and limits."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_acp.computer_use.elements import (
    MAX_INLINE,
    Element,
    Geometry,
    bounds_scale,
    element_rows,
    parse_elements,
)
from hermes_acp.computer_use.results import ActionReport, DriverRefusal, DriverReply, action_report
from hermes_acp.computer_use.surface import DriverSurface
from hermes_acp.computer_use.verdict import verdict
from hermes_acp.errors import DriverCode


def _listing(version: str, **properties: list[str]) -> DriverSurface:
    tools = [
        {"name": name, "inputSchema": {"type": "object", "properties": {p: {} for p in props}}, "capabilities": []}
        for name, props in properties.items()
    ]
    return DriverSurface.from_listing({"tools": tools}, server_version=version)


@pytest.mark.parametrize(
    ("props", "form"),
    [
        (["pid", "element_token", "element_index", "snapshot_id"], "token"),
        (["pid", "element_index", "snapshot_id"], "index_snapshot"),
        (["pid", "element_index"], "index"),
        (["pid", "x", "y"], "none"),
    ],
)
def test_element_addressing_follows_the_input_schema_not_the_version(props: list[str], form: str) -> None:
    for version in ("0.37.0", "0.14.0", "99.0.0"):
        assert _listing(version, click=props).element_form("click") == form


def test_with_only_drops_the_arguments_a_tool_schema_does_not_list() -> None:
    surface = DriverSurface.from_listing(
        {"tools": [{"name": "click", "inputSchema": {"properties": {"element_token": {}}, "required": []}}]}
    )
    assert surface.with_only("click", {"element_token": "s1:1", "bogus": 1}) == {"element_token": "s1:1"}


@pytest.mark.parametrize(
    ("report", "decision", "recommended"),
    [
        (ActionReport(ok=False, code=DriverCode("policy_denied")), "deny", None),
        (ActionReport(ok=False, code="permission_denied"), "deny", None),
        (ActionReport(ok=True, effect="confirmed"), "done", None),
        (ActionReport(ok=True, verified=True), "done", None),
        (ActionReport(ok=True, effect="unverifiable"), "verify_fresh_state", None),
        (ActionReport(ok=True, effect="suspected_noop", recommended="px"), "escalate", "px"),
        (
            ActionReport(ok=False, code=DriverCode("background_unavailable"), recommended="foreground"),
            "escalate",
            "foreground",
        ),
        (ActionReport(ok=False, code=DriverCode("stale_element_token")), "verify_fresh_state", None),
        (ActionReport(ok=True), "verify_fresh_state", None),
    ],
)
def test_the_verdict_table(report: ActionReport, decision: str, recommended: str | None) -> None:
    result = verdict(report, used_element=False, foreground=False)
    assert result["decision"] == decision
    assert result.get("recommended") == recommended


def test_an_escalation_without_advice_climbs_one_rung() -> None:
    noop = ActionReport(ok=True, effect="suspected_noop")
    assert verdict(noop, used_element=True, foreground=False)["recommended"] == "px"
    assert verdict(noop, used_element=False, foreground=False)["recommended"] == "foreground"
    assert verdict(noop, used_element=False, foreground=True)["recommended"] is None


def test_all_three_action_result_generations_are_read() -> None:
    legacy = action_report(DriverReply({"path": "ax", "verified": True, "effect": "confirmed"}, [], []))
    closed = action_report(
        DriverReply(
            {"effect": "suspected_noop", "route": "accessibility", "delivery": {"mode": "background"},
             "escalation": {"target": "pixel", "reason": "suspected_noop"}}, [], []
        )
    )  # fmt: skip
    current = action_report(DriverReply({"effect": "unverifiable", "route": "accessibility", "hint": "h"}, [], []))
    assert (legacy.verified, legacy.route) == (True, "ax")
    assert (closed.recommended, closed.delivery_mode) == ("px", "background")
    assert (current.effect, current.hint, current.ok) == ("unverifiable", "h", True)


@pytest.mark.parametrize(
    ("structured", "code"),
    [
        ({"status": "refused", "refusal": {"code": "stale_element_token", "message": "m"}}, "stale_element_token"),
        ({"code": "background_unavailable", "escalation": {"recommended": "foreground"}}, "background_unavailable"),
        ({"code": "tool_invocation_failed"}, "tool_invocation_failed"),
    ],
)
def test_refusal_codes_are_read_from_every_shape(structured: dict[str, Any], code: str) -> None:
    refusal = DriverRefusal("click", DriverReply(structured, ["the text"], [], is_error=True))
    assert refusal.code == code


def test_markdown_rows_are_parsed_when_the_driver_sends_no_element_records() -> None:
    texts = [
        'window_id=1 pid=2 elements=2 walk_ms=1 snapshot_id=s00000009\n\n- frame = "Calc"\n'
        '  - [0] push button "C" [actions=[click]]\n  - [1] text "a \\"b\\"" = "typed" [actions=[activate]]\n'
    ]
    elements = parse_elements({"snapshot_id": "s00000009"}, texts)
    assert [(e.index, e.role, e.label, e.token) for e in elements] == [
        (0, "push button", "C", "s00000009:0"),
        (1, "text", 'a \\"b\\"', "s00000009:1"),
    ]


def test_model_coordinates_map_to_driver_screenshot_pixels() -> None:
    geometry = Geometry(shot_w=2000, shot_h=1000, model_w=1000, model_h=500)
    assert geometry.to_driver(100, 50) == (200.0, 100.0)


def test_bounds_scale_is_reported_only_when_native_bounds_disagree_with_the_image_by_more_than_5_percent() -> None:
    native = [Element(index=0, role="b", label="x", frame=(900, 140, 100, 50))]
    hidpi = Geometry(shot_w=640, shot_h=800, model_w=640, model_h=800, window=(880, 120, 320, 400))
    near = Geometry(shot_w=330, shot_h=410, model_w=330, model_h=410, window=(880, 120, 320, 400))
    in_pixels = [Element(index=0, role="b", label="x", frame=(900, 140, 100, 50), shot=(40, 40, 200, 100))]
    assert bounds_scale(hidpi, native) == 0.5
    assert bounds_scale(near, native) is None
    assert bounds_scale(hidpi, in_pixels) is None


def test_at_most_100_elements_inline_and_labels_cut_at_120_characters() -> None:
    elements = [Element(index=i, role="text", label="L" * (200 if i == 0 else 5)) for i in range(MAX_INLINE + 30)]
    rows, cut = element_rows(elements, Geometry())
    assert cut and len(rows) == 100
    assert len(rows[0]["label"]) == 120 and rows[0]["label_truncated"] is True
    assert "label_truncated" not in rows[1]
