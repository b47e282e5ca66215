"""The desktop harness itself: it isolates the session, reports start-up failures, and leaves no process behind."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest

from fixtures.desktop import ChildFailed, LaneTools, open_desktop
from fixtures.desktop.processes import MARKER_VAR, marked_pids, wait_marked

pytestmark = [pytest.mark.desktop, pytest.mark.anyio]


def command_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


async def test_closing_the_desktop_ends_every_process_it_started(lane_tools: LaneTools, tmp_path: Path) -> None:
    async with open_desktop(tmp_path, apps=("calculator",), tools=lane_tools) as desktop:
        marker = desktop.env[MARKER_VAR]
        assert desktop.env["DISPLAY"] == desktop.display
        assert desktop.env["HOME"] == str(tmp_path / "home")
        assert desktop.env["DBUS_SESSION_BUS_ADDRESS"]
        # A process started by a test with the desktop's environment, as a driver is; left running on purpose.
        with (tmp_path / "stray.log").open("wb") as log:
            stray = await anyio.open_process(
                desktop.driver_command, env=desktop.env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log
            )
        expected = {desktop.app("calculator").pid, stray.pid}
        running = await wait_marked(marker, expected, limit_s=10)
        names = {command_name(pid) for pid in running}
        assert expected <= running, (
            f"not seen: {expected - running}; the driver exited with {stray.returncode}: "
            f"{(tmp_path / 'stray.log').read_text(errors='replace')[-2000:]}"
        )
        assert {"Xvfb", "dbus-daemon", "openbox", "at-spi-bus-laun", "at-spi2-registr"} <= names
        assert set(desktop.timings) >= {"xvfb", "dbus", "atspi", "openbox", "startup_total", "app:calculator-0"}

    assert marked_pids(marker) == []
    with anyio.fail_after(5):
        assert await stray.wait() != 0
    await stray.aclose()
    assert "teardown" in desktop.timings


async def test_an_app_that_dies_at_start_fails_with_its_log(lane_tools: LaneTools, tmp_path: Path) -> None:
    async with open_desktop(tmp_path, tools=lane_tools) as desktop:
        with pytest.raises(ChildFailed, match=r"app-form-0\.log"):
            await desktop.launch_app("form", extra_args=["--no-such-flag"])
        log = (desktop.log_dir / "app-form-0.log").read_text()
        assert "unrecognized arguments: --no-such-flag" in log
