"""ProviderRegistry: one provider object per configured provider, of the class its ``kind`` names."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_acp.config import load_settings
from hermes_acp.providers.anthropic import AnthropicProvider
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.providers.openai import OpenAIProvider
from hermes_acp.providers.registry import ProviderRegistry

from .support import API_KEY

pytestmark = pytest.mark.anyio


async def test_warm_up_then_each_kind_gets_its_class_once(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": API_KEY, "ANTHROPIC_API_KEY": API_KEY}
    settings = load_settings(env, home=tmp_path)
    catalog = ModelCatalog.from_settings(settings, env)
    openai_model = next(m for m in catalog.models if m.provider_id == "openai")
    anthropic_model = next(m for m in catalog.models if m.provider_id == "anthropic")
    registry = ProviderRegistry(settings, env)
    try:
        await registry.warm_up(openai_model)
        await registry.warm_up(anthropic_model)
        openai_provider = registry.provider_for(openai_model)
        anthropic_provider = registry.provider_for(anthropic_model)

        assert type(openai_provider) is OpenAIProvider
        assert type(anthropic_provider) is AnthropicProvider
        assert registry.provider_for(openai_model) is openai_provider
        assert API_KEY not in repr(anthropic_provider)
    finally:
        await registry.aclose()
