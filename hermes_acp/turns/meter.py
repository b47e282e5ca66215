"""The session's context meter: the next request as the model would get it, what it takes, and the usage update.

``Meter.request`` is the one place a model request is built from the session's state (system prompt, the history
as the projection holds it, the tool surface of this request, the image gate's answer), so what the loop sends,
what a compaction measures and what ``/status`` shows are the same thing. ``Meter.usage`` is the ``usage_update``
an editor gets after every model call and every compaction: the tokens the context holds now
(``context.measure``), the window, what the session cost so far (its subagents' work included) and, with
``[budget]`` caps, what each has left. It needs no
provider, so a session whose model lacks its key can still show its meter. Knows the turn's wiring, not ACP.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from hermes_acp.config import Effort
from hermes_acp.core import Message, Usage
from hermes_acp.providers.base import ProviderRequest
from hermes_acp.providers.catalog import CatalogModel, Cost
from hermes_acp.tools.base import AnyTool

from .budget import Budget
from .context import Measurement, measure, session_cost, window_tokens
from .ports import LiveUsage
from .projection import SessionProjection
from .request import build_request
from .state import TurnDeps

__all__ = ["Meter"]


@dataclass(frozen=True, slots=True)
class Meter:
    model: CatalogModel
    system: str
    projection: SessionProjection
    native_images: bool | None = None
    """The image gate's answer for ``model`` (``route() == "native"``); None: the model's vision."""
    models: Callable[[str], CatalogModel | None] | None = None
    """The configured models by id, for the prices of every model the session used."""
    effort: Effort | None = None
    """The thinking effort the requests ask for (it never changes the system prompt or the tool schemas)."""
    budget: Budget | None = None
    """The session's caps, shown with the meter."""

    @classmethod
    def of(cls, deps: TurnDeps) -> Meter:
        images = deps.env.images
        native = images.route() == "native" if images is not None else None
        projection = deps.recorder.projection
        return cls(deps.model, deps.system_prompt, projection, native, deps.models, deps.effort, deps.budget)

    @property
    def window(self) -> int:
        return window_tokens(self.model)

    def request(self, tools: Sequence[AnyTool], history: Sequence[Message] | None = None) -> ProviderRequest:
        """The request for ``history`` (default: the model history the projection holds) with ``tools``."""
        return build_request(
            model=self.model,
            system=self.system,
            history=self.projection.history if history is None else history,
            tools=tools,
            native_images=self.native_images,
            effort=self.effort,
        )

    def measure(self, request: ProviderRequest) -> Measurement:
        """What ``request`` (built from the projection's history) takes, anchored on the last reported usage."""
        return measure(request, self.projection.anchor)

    def usage(self, tools: Sequence[AnyTool]) -> LiveUsage:
        """The context meter now, for the request the session would send next with ``tools``."""
        caps = tuple(self.budget.status()) if self.budget is not None else ()
        return LiveUsage(used=self.measure(self.request(tools)).used, size=self.window, cost=self.cost(), budget=caps)

    def cost(self) -> Cost | None:
        """What the session's model calls cost so far, its subagents' included (None when no model it used has
        prices)."""
        usage = dict(self.projection.usage_by_model)
        for model_id, child in self.projection.children_usage_by_model().items():
            usage[model_id] = usage[model_id] + child if model_id in usage else child
        return session_cost(usage, self._price)

    def cost_of(self, usage_by_model: Mapping[str, Usage]) -> Cost | None:
        """What these model calls cost (a subagent's, for ``/status``)."""
        return session_cost(usage_by_model, self._price)

    def _price(self, model_id: str) -> CatalogModel | None:
        if model_id == self.model.id:
            return self.model
        return self.models(model_id) if self.models is not None else None
