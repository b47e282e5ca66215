"""The session's thinking effort: which effort a model gets, and what the user may choose for it.

A model whose catalog entry declares ``efforts`` has a thinking-effort choice; any other model has none, and no
effort is ever sent to it. The choice is kept in the session record's ``meta`` (``EFFORT_META_KEY``), so it survives
a reload and travels with a fork, like the model. The effort a request gets is the chosen one when the session's
current model accepts it, else that model's ``default_effort``: switching to a model that lacks the chosen effort
falls back to its default without forgetting the choice. A model with efforts but no default of its own offers
``PROVIDER_DEFAULT`` too, which sends no effort at all. Pure; the session stores, the protocol shows.
"""

from __future__ import annotations

from hermes_acp.config import Effort
from hermes_acp.errors import InvalidParamsError
from hermes_acp.providers.catalog import CatalogModel

__all__ = ["EFFORT_META_KEY", "PROVIDER_DEFAULT", "choose_effort", "current_effort", "effort_choices"]

EFFORT_META_KEY = "effort"
PROVIDER_DEFAULT = "default"
"""The choice that sends no effort (the provider's own default), offered for a model without ``default_effort``."""


def effort_choices(model: CatalogModel | None) -> tuple[str, ...]:
    """What may be chosen for ``model``, in the configured order; empty when it has no efforts."""
    if model is None or not model.efforts:
        return ()
    return ((PROVIDER_DEFAULT,) if model.default_effort is None else ()) + model.efforts


def current_effort(model: CatalogModel | None, chosen: object) -> Effort | None:
    """The effort ``model``'s requests get, given the session's stored choice (None: send none)."""
    if model is None or not model.efforts:
        return None
    for effort in model.efforts:
        if effort == chosen:
            return effort
    return model.default_effort


def choose_effort(model: CatalogModel | None, value: str) -> str | None:
    """The choice to store for ``value`` (None: forget it); ``InvalidParamsError`` naming what may be chosen."""
    choices = effort_choices(model)
    if model is None or not choices:
        name = model.id if model is not None else "the session's model"
        raise InvalidParamsError(f"value: {name} has no thinking efforts to choose from", field="value")
    if value not in choices:
        raise InvalidParamsError(
            f"value: {value!r} is not a thinking effort of {model.id}; choose one of {', '.join(choices)}",
            field="value",
        )
    return None if value == PROVIDER_DEFAULT else value
