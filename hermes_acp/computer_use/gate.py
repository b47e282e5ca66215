"""The session's image gate (``hermes_acp.tools.context.ImageGate``): one decision for every image bound for the model.

Route (docs/computer-use.md §10): ``agent.image_input_mode`` ``native`` always sends pixels; ``text`` never does;
``auto`` sends pixels when the session's current model has vision and no ``auxiliary.vision`` model is configured.
Otherwise the auxiliary vision model (when configured) describes the images in one bounded request through the
provider seam, with the long edge scaled to at most 1456 px and the scale factor stated so coordinates can be
given in original pixels; when that fails, or nothing describes images, the caller's ``fallback`` (for a
screenshot: its element list) or a note stands in. Native pixels are re-encoded to fit
``vision.embed_target_bytes`` with the long edge at most 1568 px, at most 4 per call, off the event loop.

When images reach the model as text although pixels were meant (no vision and nothing to describe them, or the
auxiliary model failed), the user is told once per session and reason (``notify``, a ``Notice``).

It deliberately knows nothing about where images come from (screenshots, MCP results, prompts).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Sequence
from contextlib import aclosing

import anyio
import anyio.to_thread
import structlog

from hermes_acp.config import Settings
from hermes_acp.core import ImagePart, TextPart, UserMessage
from hermes_acp.core.notice import Notice
from hermes_acp.errors import HermesError
from hermes_acp.providers.base import ProviderRequest, ResponseDone
from hermes_acp.providers.catalog import CatalogModel, ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.tools.context import GatedImages, ImageRoute

from .images import Fitted, ImageDecodeError, fit

__all__ = ["AUX_MAX_EDGE", "MAX_IMAGES", "NATIVE_MAX_EDGE", "SessionImageGate"]

NATIVE_MAX_EDGE = 1568
AUX_MAX_EDGE = 1456
MAX_IMAGES = 4
AUX_TIMEOUT_S = 60.0
AUX_MAX_OUTPUT_TOKENS = 1024
_AUX_SYSTEM = (
    "You describe images for an assistant that cannot see them. Be factual and compact: visible text verbatim, "
    "controls and their state, anything unusual. Give positions as pixel coordinates in the ORIGINAL image when "
    "asked to."
)
_log = structlog.get_logger("hermes_acp.computer_use")


class SessionImageGate:
    def __init__(
        self,
        settings: Settings,
        *,
        model: Callable[[], CatalogModel | None],
        catalog: ModelCatalog,
        providers: ProviderRegistry,
        aux_timeout_s: float = AUX_TIMEOUT_S,
    ):
        self._settings = settings
        self._model = model
        self._catalog = catalog
        self._providers = providers
        self._aux_timeout_s = aux_timeout_s
        self.notify: Callable[[Notice], Awaitable[None]] | None = None
        """Where a downgrade is told (the session sets it); told once per reason."""
        self._told: set[str] = set()

    @property
    def embed_target_bytes(self) -> int:
        return self._settings.vision.embed_target_bytes

    def _aux_model(self) -> CatalogModel | None:
        aux_id = self._settings.auxiliary.vision.model
        if aux_id is None or aux_id not in self._catalog:
            return None
        return self._catalog.get(aux_id)

    def route(self) -> ImageRoute:
        mode = self._settings.agent.image_input_mode
        model = self._model()
        if mode == "native" or (
            mode == "auto" and model is not None and model.vision and self._settings.auxiliary.vision.model is None
        ):
            return "native"
        return "auxiliary" if self._aux_model() is not None else "text"

    async def admit(
        self,
        images: Sequence[ImagePart],
        *,
        purpose: str,
        fallback: str | None = None,
        hint: str | None = None,
    ) -> GatedImages:
        if not images:
            return GatedImages(parts=[], route=self.route())
        route = self.route()
        if route == "native":
            return await self._native(images)
        if route == "auxiliary":
            described = await self._describe(images, purpose=purpose, hint=hint)
            if described is not None:
                return GatedImages(parts=[described], route="auxiliary", scales=tuple(None for _ in images))
        await self._tell_downgrade(route)
        note = fallback or self._note(images, purpose)
        return GatedImages(parts=[TextPart(text=note)], route="text", scales=tuple(None for _ in images))

    async def _tell_downgrade(self, route: ImageRoute) -> None:
        """Images meant for the model go as text: say so once per reason (not when the user chose text)."""
        if self._settings.agent.image_input_mode == "text" or self.notify is None or route in self._told:
            return
        self._told.add(route)
        model = self._model()
        if route == "auxiliary":
            aux = self._aux_model()
            notice = Notice(
                "warning",
                "Images reach the model as text: the auxiliary vision model failed",
                f"{aux.id if aux else 'auxiliary.vision'} did not describe them; the model gets what text there is"
                " (a screenshot's element list)",
            )
        else:
            notice = Notice(
                "warning",
                "Images reach the model as text only",
                f"{model.id if model else 'the model'} has no vision and no auxiliary.vision model is configured;"
                " the model gets what text there is (a screenshot's element list)",
            )
        await self.notify(notice)

    def _note(self, images: Sequence[ImagePart], purpose: str) -> str:
        model = self._model()
        why = (
            "image_input_mode is text" if self._settings.agent.image_input_mode == "text"
            else f"{model.id if model else 'the model'} has no vision and no auxiliary.vision model described it"
        )  # fmt: skip
        return f"[{len(images)} image(s) not shown ({purpose}): {why}]"

    async def _fit(self, image: ImagePart, *, max_edge: int = NATIVE_MAX_EDGE) -> Fitted:
        """``image`` re-encoded to the embed budget and ``max_edge`` (off the event loop)."""
        data = base64.b64decode(image.data, validate=False)
        target = self.embed_target_bytes
        return await anyio.to_thread.run_sync(
            lambda: fit(data, image.media_type, max_edge=max_edge, target_bytes=target)
        )

    async def _native(self, images: Sequence[ImagePart]) -> GatedImages:
        parts: list[TextPart | ImagePart] = []
        scales: list[float | None] = []
        for position, image in enumerate(images):
            label = image.label or "image"
            if position >= MAX_IMAGES:
                parts.append(TextPart(text=f"[{label} not attached: at most {MAX_IMAGES} images per result]"))
                scales.append(None)
                continue
            try:
                fitted = await self._fit(image)
            except (ImageDecodeError, binascii.Error, ValueError) as exc:
                if len(image.data) * 3 // 4 <= self.embed_target_bytes:
                    parts.append(image)  # unreadable here, but small: the provider decides
                else:
                    parts.append(TextPart(text=f"[{label} could not be read: {exc}]"))
                scales.append(None)
                continue
            data = base64.b64encode(fitted.data).decode("ascii")
            parts.append(ImagePart(media_type=fitted.media_type, data=data, label=image.label))
            scales.append(fitted.scale)
        return GatedImages(parts=parts, route="native", scales=tuple(scales))

    async def _describe(self, images: Sequence[ImagePart], *, purpose: str, hint: str | None) -> TextPart | None:
        aux = self._aux_model()
        if aux is None:
            return None
        parts: list[TextPart | ImagePart] = []
        notes = []
        for position, image in enumerate(images[:MAX_IMAGES]):
            try:
                fitted = await self._fit(image, max_edge=AUX_MAX_EDGE)
            except (ImageDecodeError, binascii.Error, ValueError):
                continue
            notes.append(
                f"Image {position + 1}: original {fitted.original_width}x{fitted.original_height} px, shown at "
                f"{fitted.width}x{fitted.height} (scale factor {fitted.scale:.4f}); divide what you measure by "
                f"{fitted.scale:.4f} to give ORIGINAL pixel coordinates."
            )
            parts.append(ImagePart(media_type=fitted.media_type, data=base64.b64encode(fitted.data).decode("ascii")))
        if not parts:
            return None
        prompt = f"Describe {purpose}.\n" + "\n".join(notes)
        if hint:
            prompt += f"\nKnown elements (from the accessibility tree):\n{hint}"
        request = ProviderRequest(
            model=aux.model,
            system=_AUX_SYSTEM,
            messages=[UserMessage(parts=[TextPart(text=prompt), *parts])],
            max_output_tokens=AUX_MAX_OUTPUT_TOKENS,
        )
        try:
            with anyio.fail_after(self._aux_timeout_s):
                text = await self._ask(aux, request)
        except (HermesError, TimeoutError) as exc:
            _log.warning("auxiliary vision failed", model=aux.id, error=str(exc))
            return None
        if not text.strip():
            return None
        return TextPart(
            text=f"[{purpose}, described by the auxiliary vision model {aux.id}; coordinates are original pixels]\n"
            f"{text.strip()}"
        )

    async def _ask(self, aux: CatalogModel, request: ProviderRequest) -> str:
        provider = self._providers.provider_for(aux)
        done: ResponseDone | None = None
        async with aclosing(provider.stream(request)) as events:
            async for event in events:
                if isinstance(event, ResponseDone):
                    done = event
        return done.message.text if done is not None else ""
