"""``python -m probes.busy`` (tests/README.md, "On a busy machine"): the command runs while the burners spin, its exit
status is the answer, and no burner outlives it."""

from __future__ import annotations

import multiprocessing
import sys

import pytest

from probes.busy import main


def test_the_command_s_status_is_returned_and_the_burners_are_stopped() -> None:
    assert main(["--cores", "2", "--nice", "5", "--", sys.executable, "-c", "raise SystemExit(3)"]) == 3
    assert multiprocessing.active_children() == [], "every burner was stopped"


def test_no_command_is_an_error() -> None:
    with pytest.raises(SystemExit) as refused:
        main(["--cores", "1"])
    assert refused.value.code == 2
