"""Shared test setup: anyio on asyncio, JSON logging to stderr, and no real model requests.

Rules for every test (from the MCP SDK's interaction suite): public API only, no sleeps, every wait that could
hang is bounded with ``anyio.fail_after``, no network beyond 127.0.0.1.
"""

from __future__ import annotations

import pytest

from hermes_acp.telemetry import configure_logging


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True, scope="session")
def _logging_to_stderr() -> None:
    configure_logging(None, "warning")
