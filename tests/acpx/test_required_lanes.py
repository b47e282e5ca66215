"""The optional lanes skip when their tools are missing, except under ``HERMES_REQUIRE_LANES=1`` (.ci/run), where a
missing lane fails the run."""

from __future__ import annotations

import pytest

from tests.fakes.lanes import REQUIRE_LANES_ENV, lane_missing


def test_a_missing_lane_skips_with_its_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE_LANES_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="acpx lane not installed"):
        lane_missing("acpx lane not installed: run `bash .ci/acpx-setup.sh`")


def test_a_missing_lane_fails_when_ci_requires_the_lanes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_LANES_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="acpx lane not installed"):
        lane_missing("acpx lane not installed: run `bash .ci/acpx-setup.sh`")
