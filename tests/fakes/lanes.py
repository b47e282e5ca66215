"""The optional test lanes (the real cua-driver desktop, acpx) skip when their tools are not installed, with the hint
that installs them; under ``HERMES_REQUIRE_LANES=1`` (what .ci/run sets after installing both) they fail instead,
so a broken install cannot pass CI as a row of skips."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

__all__ = ["REQUIRE_LANES_ENV", "lane_missing"]

REQUIRE_LANES_ENV = "HERMES_REQUIRE_LANES"


def lane_missing(reason: str, *, allow_module_level: bool = False) -> NoReturn:
    """Skip with ``reason``, or fail with it when the lanes are required."""
    if os.environ.get(REQUIRE_LANES_ENV) == "1":
        pytest.fail(f"{reason} ({REQUIRE_LANES_ENV}=1: the lane must be installed)", pytrace=False)
    pytest.skip(reason, allow_module_level=allow_module_level)
