"""The model catalog: every configured model as ``<provider id>:<model id>``, and the default one.

Built from ``Settings`` (and rebuilt in place, ``replace``, when the in-editor setup or a client's ``providers/set``
changes them); a model whose provider lacks its API key stays listed (so pickers show it) but is marked unusable, and
prompting with it answers ``auth_required`` naming the variable to set. Each model carries what the session needs to
offer and account for it: its context window, its thinking efforts (for a ``thought_level`` option) and its prices
(``cost`` turns a ``Usage`` into an amount in USD). This module knows config, not HTTP.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from hermes_acp.config import Effort, Settings
from hermes_acp.core import Usage
from hermes_acp.errors import ConfigError, UnknownModelError

__all__ = ["DEFAULT_CONTEXT_WINDOW", "PRICE_UNIT_TOKENS", "CatalogModel", "Cost", "ModelCatalog"]

DEFAULT_CONTEXT_WINDOW = 128_000
"""Used for the context meter when a model's ``context_window`` is not configured."""
PRICE_UNIT_TOKENS = 1_000_000
"""Prices are configured per million tokens."""


@dataclass(frozen=True, slots=True)
class Cost:
    """An amount of money, as ACP's ``usage_update.cost`` carries it."""

    amount: float
    currency: str = "USD"


@dataclass(frozen=True, slots=True)
class CatalogModel:
    id: str
    """``<provider id>:<model id>``, the id clients see."""
    provider_id: str
    model: str
    """The provider's own model id."""
    name: str
    vision: bool
    context_window: int
    max_output_tokens: int | None
    api_key_env: str | None
    usable: bool
    """False when the provider needs an API key that is not set."""
    efforts: tuple[Effort, ...] = ()
    """The thinking efforts the model accepts, in the configured order; empty: no effort option, no parameter."""
    default_effort: Effort | None = None
    input_price: float | None = None
    """USD per million prompt tokens; None when the model has no prices."""
    output_price: float | None = None

    def cost(self, usage: Usage) -> Cost | None:
        """What ``usage`` cost, or None when the model has no prices. Every prompt token (cached ones included) is
        priced as input, every output token (reasoning included) as output."""
        if self.input_price is None or self.output_price is None:
            return None
        amount = (usage.input_tokens * self.input_price + usage.output_tokens * self.output_price) / PRICE_UNIT_TOKENS
        return Cost(amount=amount)


class ModelCatalog:
    def __init__(self, models: list[CatalogModel], default_id: str | None):
        self._models = {m.id: m for m in models}
        self.default_id = default_id

    @classmethod
    def from_settings(cls, settings: Settings, env: Mapping[str, str]) -> ModelCatalog:
        models: list[CatalogModel] = []
        for provider_id, provider in settings.providers.items():
            usable = provider.api_key_env is None or bool(env.get(provider.api_key_env))
            models.extend(
                CatalogModel(
                    id=f"{provider_id}:{entry.id}",
                    provider_id=provider_id,
                    model=entry.id,
                    name=entry.name or entry.id,
                    vision=entry.vision,
                    context_window=entry.context_window or DEFAULT_CONTEXT_WINDOW,
                    max_output_tokens=entry.max_output_tokens,
                    api_key_env=provider.api_key_env,
                    usable=usable,
                    efforts=tuple(entry.efforts or ()),
                    default_effort=entry.default_effort,
                    input_price=entry.input_price,
                    output_price=entry.output_price,
                )
                for entry in provider.models
            )
        ids = {m.id for m in models}
        default = settings.model.default
        if default is not None and default not in ids:
            raise ConfigError(
                f"{settings.where('model.default')}: model.default: {default!r} is not a configured model"
                f"{_suggest(default, ids) or ' (configure its provider under [providers.<id>])'}"
            )
        if default is None:
            candidates = [m.id for m in models if m.usable] or [m.id for m in models]
            default = candidates[0] if candidates else None
        return cls(models, default)

    def replace(self, other: ModelCatalog) -> None:
        """Offer ``other``'s models and default from now on, in place: every session holds this object, so each one
        sees the change at its next request (a session whose model left falls back to the default)."""
        self._models = dict(other._models)
        self.default_id = other.default_id

    @property
    def models(self) -> list[CatalogModel]:
        return list(self._models.values())

    def __contains__(self, model_id: object) -> bool:
        return model_id in self._models

    def get(self, model_id: str) -> CatalogModel:
        try:
            return self._models[model_id]
        except KeyError:
            raise UnknownModelError(
                f"unknown model {model_id!r}{_suggest(model_id, self._models)}",
                field="modelId",
                data={"valid": sorted(self._models)},
            ) from None


def _suggest(model_id: str, known: object) -> str:
    candidates = list(known)  # type: ignore[call-overload]
    by_suffix = [c for c in candidates if c.split(":", 1)[-1] == model_id.split(":", 1)[-1]]
    close = by_suffix or difflib.get_close_matches(model_id, candidates, n=3, cutoff=0.5)
    return f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
