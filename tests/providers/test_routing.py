"""Where a provider's requests go while the process runs: a client's routes and disables over config.toml's
settings, kept across a reload, a routed provider built anew with the client's headers and no key of its own, and
the old provider object kept open (a turn may still stream from it) until the registry closes."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_acp.config import Settings, load_settings
from hermes_acp.providers._http import HttpProvider
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.providers.routing import ProviderRoute, routed_settings
from hermes_acp.providers.scripted import ScriptedProvider

pytestmark = pytest.mark.anyio
CONFIG = """\
[model]
default = "a:m"

[providers.a]
kind = "openai"
base_url = "http://a.example/v1"
api_key_env = "A_API_KEY"
models = ["m"]

[providers.b]
kind = "anthropic"
base_url = "http://b.example"
models = ["n"]
"""


def _settings(tmp_path: Path, text: str = CONFIG) -> Settings:
    (tmp_path / "config.toml").write_text(text)
    return load_settings({}, home=tmp_path)


def test_a_route_replaces_the_endpoint_and_drops_the_key(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    routed = routed_settings(settings, {"a": ProviderRoute("anthropic", "http://gw.example/", {"X": "y"})}, set())
    a = routed.providers["a"]
    assert (a.kind, a.base_url, a.api_key_env, [m.id for m in a.models]) == (
        "anthropic",
        "http://gw.example",
        None,
        ["m"],
    )
    assert routed.providers["b"] == settings.providers["b"]
    assert settings.providers["a"].base_url == "http://a.example/v1", "the file's settings are not changed"


def test_a_disabled_provider_leaves_and_takes_the_default_with_it(tmp_path: Path) -> None:
    routed = routed_settings(_settings(tmp_path), {}, {"a"})
    assert set(routed.providers) == {"b"}
    catalog = ModelCatalog.from_settings(routed, {})
    assert catalog.default_id == "b:n"


def test_a_new_provider_gets_the_listed_models(tmp_path: Path) -> None:
    routed = routed_settings(
        _settings(tmp_path), {"gw": ProviderRoute("openai", "http://gw/v1", {}, ("x", "y"))}, set()
    )
    assert [m.id for m in routed.providers["gw"].models] == ["x", "y"]


async def test_routes_survive_a_reload_and_old_providers_close_with_the_registry(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    env = {"A_API_KEY": "secret"}
    registry = ProviderRegistry(settings, env, overrides={"scripted": ScriptedProvider([], provider_id="scripted")})
    catalog = ModelCatalog.from_settings(settings, env)
    first = registry.provider_for(catalog.get("a:m"))
    registry.route("a", ProviderRoute("openai", "http://gw.example/v1", {"Authorization": "Bearer gw"}))
    catalog.replace(registry.catalog_for())
    second = registry.provider_for(catalog.get("a:m"))
    assert second is not first, "built anew for the next request"
    assert "gw.example" in repr(second)
    registry.reload(_settings(tmp_path, CONFIG.replace('"n"]', '"n", "n2"]')))
    catalog.replace(registry.catalog_for())
    assert registry.settings.providers["a"].base_url == "http://gw.example/v1", "the route outlives the reload"
    assert "b:n2" in catalog
    assert registry.provider_for(catalog.get("a:m")) is second, "unchanged settings keep the live provider"
    registry.disable("b")
    catalog.replace(registry.catalog_for())
    assert "b:n" not in catalog and registry.disabled == {"b"}
    registry.route("b", ProviderRoute("anthropic", "http://b2.example", {}))
    assert "b" in registry.settings.providers and not registry.disabled
    await registry.aclose()
    for provider in (first, second):
        assert isinstance(provider, HttpProvider) and provider.closed
