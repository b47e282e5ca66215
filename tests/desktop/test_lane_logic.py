"""The lane's toolkit-free parts, checked on any machine: calculator arithmetic, the state file, the
reply-shape recorder and the missing-tool report. None of these needs Xvfb or the driver.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures.desktop import LaneUnavailable, find_lane_tools
from fixtures.desktop.lane_tools import DRIVER_ENV
from fixtures.gtk_apps.app_state import STATE_ENV, StateFile, state_path
from fixtures.gtk_apps.calc_engine import CalcEngine

from .driver_session import shape_of


def pressed(*keys: str) -> CalcEngine:
    engine = CalcEngine()
    for key in keys:
        assert engine.press(key)
    return engine


@pytest.mark.parametrize(
    ("keys", "display"),
    [
        (("2", "+", "3", "="), "5"),
        (("2", "+", "3", "×", "4", "="), "14"),
        (("1", "0", "−", "4", "÷", "2", "="), "8"),
        (("1", "÷", "4", "="), "0.25"),
        (("3", "−", "5", "="), "-2"),
        (("7", "+", "×", "2", "="), "14"),
        (("2", "+", "3", "=", "×", "2", "="), "10"),
        (("2", "+", "3", "=", "9"), "9"),
        (("0", "0", "7"), "7"),
        (("1", "+"), "1+"),
        (("1", "÷", "0", "="), "Error"),
        (("1", "÷", "0", "=", "C", "4"), "4"),
    ],
)
def test_calculator_keys(keys: tuple[str, ...], display: str) -> None:
    assert pressed(*keys).display == display


def test_calculator_accepts_ascii_operators_and_records_canonical_presses() -> None:
    engine = pressed("6", "*", "7", "-", "2", "/", "1", "Return")
    assert engine.display == "40"
    assert engine.presses == ["6", "×", "7", "−", "2", "÷", "1", "="]
    assert engine.snapshot()["history"] == ["6×7−2÷1=40"]


def test_calculator_ignores_unknown_keys() -> None:
    engine = CalcEngine()
    assert engine.press("%") is False
    assert engine.presses == []
    assert engine.snapshot() == {
        "display": "0",
        "expression": "",
        "result": None,
        "error": False,
        "presses": [],
        "history": [],
    }


def test_state_file_replaces_the_whole_document_each_write(tmp_path: Path) -> None:
    path = tmp_path / "state" / "calc.json"
    state = StateFile(path, app="calculator", title="Calculator")
    state.write({"display": "0"}, ready=False)
    state.write({"display": "5"}, ready=True)

    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["seq"] == 2
    assert document["ready"] is True
    assert document["display"] == "5"
    assert document["app"] == "calculator"
    assert [entry.name for entry in path.parent.iterdir()] == ["calc.json"]


def test_state_path_prefers_the_command_line_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STATE_ENV, "/from/env.json")
    assert state_path("/from/cli.json") == Path("/from/cli.json")
    assert state_path(None) == Path("/from/env.json")
    monkeypatch.delenv(STATE_ENV)
    assert state_path(None) is None


def test_shape_merges_list_items_and_marks_optional_keys() -> None:
    value = {"elements": [{"label": "C", "index": 0}, {"index": 1, "value": None}, {"index": 2, "value": "x"}]}
    assert shape_of(value) == {"elements": [{"index": "int", "label?": "str", "value?": "null|str"}]}
    assert shape_of({"empty": [], "flag": True, "ratio": 0.5}) == {"empty": [], "flag": "bool", "ratio": "float"}


def test_missing_driver_is_reported_with_the_install_hint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(DRIVER_ENV, str(tmp_path / "no-such-cua-driver"))
    with pytest.raises(LaneUnavailable, match=r"cua-driver.*desktop-setup\.sh"):
        find_lane_tools()
