"""The auxiliary vision model as the image gate's ``Describer``: one bounded request through the provider seam that
turns images into text (``auxiliary.vision.model``).

``describer_for`` makes one when the configured model is in the catalog, else None (the gate then sends text). The
provider is looked up at each request, so a missing key fails that request (a ``ProviderError``, which the gate
reports and falls back from) rather than the session. It knows nothing about where the images come from or how the
gate routes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import aclosing
from dataclasses import dataclass

from hermes_acp.config import Settings
from hermes_acp.core import ImagePart, TextPart, UserMessage

from .base import ProviderRequest, ResponseDone
from .catalog import CatalogModel, ModelCatalog
from .registry import ProviderRegistry

__all__ = ["ModelDescriber", "describer_for"]


@dataclass(frozen=True, slots=True)
class ModelDescriber:
    model: CatalogModel
    providers: ProviderRegistry

    @property
    def id(self) -> str:
        return self.model.id

    async def describe(self, prompt: str, images: Sequence[ImagePart], *, system: str, max_output_tokens: int) -> str:
        request = ProviderRequest(
            model=self.model.model,
            system=system,
            messages=[UserMessage(parts=[TextPart(text=prompt), *images])],
            max_output_tokens=max_output_tokens,
        )
        provider = self.providers.provider_for(self.model)
        done: ResponseDone | None = None
        async with aclosing(provider.stream(request)) as events:
            async for event in events:
                if isinstance(event, ResponseDone):
                    done = event
        return done.message.text if done is not None else ""


def describer_for(settings: Settings, catalog: ModelCatalog, providers: ProviderRegistry) -> ModelDescriber | None:
    """The ``auxiliary.vision`` model as a describer; None when none is configured or the catalog lacks it."""
    aux_id = settings.auxiliary.vision.model
    if aux_id is None or aux_id not in catalog:
        return None
    return ModelDescriber(catalog.get(aux_id), providers)
