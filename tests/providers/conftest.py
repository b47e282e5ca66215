"""Fixtures for the HTTP provider tests: the anyio backend (asyncio, as in production)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
