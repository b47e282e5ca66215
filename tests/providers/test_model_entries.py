"""Model-entry and provider keys of config.toml (efforts, prices, context window, think tags, send_back), validated
with errors that name the key, and what the catalog makes of them (efforts for the thought_level option, cost)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_acp.config import load_settings
from hermes_acp.core import Usage
from hermes_acp.errors import ConfigError
from hermes_acp.providers.catalog import DEFAULT_CONTEXT_WINDOW, Cost, ModelCatalog

PROVIDER = '[providers.p]\nkind = "{kind}"\nbase_url = "http://127.0.0.1:1/v1"\n'


def catalog(tmp_path: Path, text: str, kind: str = "openai") -> ModelCatalog:
    (tmp_path / "config.toml").write_text(PROVIDER.format(kind=kind) + text)
    return ModelCatalog.from_settings(load_settings({}, home=tmp_path), {})


def config_error(tmp_path: Path, text: str, kind: str = "openai") -> str:
    with pytest.raises(ConfigError) as caught:
        catalog(tmp_path, text, kind)
    return str(caught.value)


def test_efforts_prices_and_windows_reach_the_catalog(tmp_path: Path) -> None:
    models = catalog(
        tmp_path,
        'models = [{ id = "big", context_window = 200000, max_output_tokens = 32000, efforts = ["low", "high"],'
        ' default_effort = "high", input_price = 3.0, output_price = 15.0 }, "small"]\n',
    )

    big, small = models.get("p:big"), models.get("p:small")
    assert (big.efforts, big.default_effort, big.context_window, big.max_output_tokens) == (
        ("low", "high"),
        "high",
        200_000,
        32_000,
    )
    assert (small.efforts, small.default_effort, small.context_window) == ((), None, DEFAULT_CONTEXT_WINDOW)
    usage = Usage(input_tokens=1_000_000, output_tokens=200_000, cached_read_tokens=500_000, thought_tokens=50_000)
    assert big.cost(usage) == Cost(amount=3.0 + 3.0, currency="USD")
    assert small.cost(usage) is None


@pytest.mark.parametrize(
    ("entry", "complaint"),
    [
        ('{ id = "m", efforts = ["low"], default_effort = "high" }', "default_effort: 'high' is not one of efforts"),
        ('{ id = "m", default_effort = "low" }', "default_effort: 'low' is not one of efforts"),
        ('{ id = "m", efforts = [] }', "efforts: give at least one effort"),
        ('{ id = "m", efforts = ["low", "low"] }', "efforts: each effort once"),
        ('{ id = "m", efforts = ["turbo"] }', "providers.p.models.0.efforts.0"),
        ('{ id = "m", input_price = 1.0 }', "input_price and output_price: give both"),
        ('{ id = "m", input_price = -1.0, output_price = 1.0 }', "providers.p.models.0.input_price"),
        ('{ id = "m", context_window = 0 }', "providers.p.models.0.context_window"),
        ('{ id = "m", max_output_tokens = -5 }', "providers.p.models.0.max_output_tokens"),
        ('{ id = "m", think_tag = true }', "unknown key 'providers.p.models.0.think_tag'"),
    ],
)
def test_bad_model_entries_are_refused_naming_the_key(tmp_path: Path, entry: str, complaint: str) -> None:
    message = config_error(tmp_path, f"models = [{entry}]\n")
    assert complaint in message
    assert str(tmp_path / "config.toml") in message


def test_send_back_is_for_openai_compatible_providers_and_names_known_fields(tmp_path: Path) -> None:
    assert "send_back: only for kind" in config_error(tmp_path, 'send_back = ["reasoning_content"]\n', "anthropic")
    assert "providers.p.send_back.0" in config_error(tmp_path, 'send_back = ["thoughts"]\n')
    assert catalog(tmp_path, 'send_back = ["reasoning_details", "extra_content"]\nmodels = ["m"]\n').get("p:m")
