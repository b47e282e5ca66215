"""The seam with ``hermes_acp.sessions``: the driver is entered through ``SessionRuntime.enter`` and must be torn
down by it when the session closes."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from fixtures.cua_driver_sim import command
from hermes_acp.computer_use.driver import DriverClient, DriverParams
from hermes_acp.sessions._runtime import SessionRuntime

pytestmark = pytest.mark.anyio


async def test_a_session_runtime_starts_and_stops_the_driver(tmp_path: Path) -> None:
    argv, env = command(state=tmp_path / "state.json")
    runtime = SessionRuntime("s-seam")
    async with anyio.create_task_group() as group:
        await group.start(runtime.run)
        driver = DriverClient(runtime, DriverParams(argv=argv, env=env, call_timeout_s=5))
        with anyio.fail_after(10):
            reply = await driver.call("list_windows", {})
        assert len(reply.structured["windows"]) == 2
        await runtime.aclose()
