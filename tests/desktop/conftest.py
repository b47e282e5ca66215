"""Fixtures of the real-driver lane: the installed tools (or a skip), a live desktop, a connected driver.

`desktop` brings up Xvfb + D-Bus + AT-SPI + openbox with the calculator and the form; `driver` is the
real `cua-driver mcp --no-overlay` connected over stdio. Both skip the test, with the reason, when the
lane is not installed (`bash .ci/desktop-setup.sh` installs it), and fail it under `HERMES_REQUIRE_LANES=1`.
Each test's driver calls are written to `<tmp_path>/driver-calls.json`, and also to
`$HERMES_DESKTOP_RECORD_DIR/<test>.json` when that is set.

Deliberately not known here: what the tests check.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fixtures.desktop import Desktop, LaneTools, LaneUnavailable, find_lane_tools, open_desktop
from tests.fakes.lanes import lane_missing

from .driver_session import DriverSession, connect_driver, write_records

RECORD_DIR_ENV = "HERMES_DESKTOP_RECORD_DIR"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "desktop: needs Xvfb, at-spi and the real cua-driver (the real-driver lane)")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def lane_tools() -> LaneTools:
    try:
        return find_lane_tools()
    except LaneUnavailable as error:
        lane_missing(str(error))


@pytest.fixture
async def desktop(lane_tools: LaneTools, tmp_path: Path) -> AsyncIterator[Desktop]:
    async with open_desktop(tmp_path / "desktop", apps=("calculator", "form"), tools=lane_tools) as opened:
        yield opened


@pytest.fixture
async def driver(desktop: Desktop, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[DriverSession]:
    async with connect_driver(desktop, tmp_path / "driver") as session:
        try:
            yield session
        finally:
            flow = request.node.name
            write_records(session.records, tmp_path / "driver-calls.json", flow=flow, server_info=session.server_info)
            record_dir = os.environ.get(RECORD_DIR_ENV)
            if record_dir:
                write_records(
                    session.records, Path(record_dir) / f"{flow}.json", flow=flow, server_info=session.server_info
                )
