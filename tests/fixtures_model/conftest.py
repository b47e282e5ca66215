"""Fixtures for the scripted model server tests: the anyio backend (asyncio, which the server runs on)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
