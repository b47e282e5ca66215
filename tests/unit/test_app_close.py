"""The app's way out is bounded: the providers and the store are closed after the sessions, each step within
``close_timeout_s``, so a provider's HTTP client or a store that hangs on close cannot hold the process (and the
store is still closed when the providers hang)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from hermes_acp.app import App, open_app
from hermes_acp.config import load_settings
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.storage import InMemorySessionStore

pytestmark = pytest.mark.anyio


class _HangingProviders(ProviderRegistry):
    async def aclose(self) -> None:
        await anyio.sleep_forever()


class _Store(InMemorySessionStore):
    def __init__(self, *, hang: bool = False) -> None:
        super().__init__()
        self.hang = hang
        self.closed = False

    async def aclose(self) -> None:
        if self.hang:
            await anyio.sleep_forever()
        self.closed = True


@pytest.mark.parametrize("hanging", ["providers", "store"])
async def test_closing_the_app_is_bounded_when_a_provider_or_the_store_hangs(tmp_path: Path, hanging: str) -> None:
    env = {"HERMES_ACP_HOME": str(tmp_path / "home")}
    settings = load_settings(env)
    store = _Store(hang=hanging == "store")
    registry = ProviderRegistry if hanging == "store" else _HangingProviders
    app = App(settings, env, store, providers=registry(settings, env), close_timeout_s=0.05)
    with anyio.fail_after(10):
        async with open_app(app):
            pass
    assert store.closed is (hanging == "providers"), "the store is closed even when the providers hang"
