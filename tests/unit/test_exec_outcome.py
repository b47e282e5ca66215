"""``exec``'s exit code when a shutdown cut the run short: 128 + the signal's number, and Windows' console events
(closing the window, logging off, shutting down: names ``platform.signals`` hands over, no signal behind them)
counted as a hang-up, 129, as docs/ci.md's table says."""

from __future__ import annotations

import signal

import pytest

from hermes_acp.headless.outcome import Outcome


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("SIGINT", 128 + signal.SIGINT.value),
        ("SIGTERM", 128 + signal.SIGTERM.value),
        ("CTRL_CLOSE_EVENT", 129),
        ("CTRL_LOGOFF_EVENT", 129),
        ("CTRL_SHUTDOWN_EVENT", 129),
    ],
)
def test_a_shutdown_s_name_gives_the_exit_code(name: str, code: int) -> None:
    outcome = Outcome.signalled(name, "cancelled")
    assert outcome.code == code
    assert outcome.failure == {"kind": "cancelled", "message": f"{name}: the turn was cancelled"}
    assert outcome.name == "cancelled" and outcome.stop_reason == "cancelled"
