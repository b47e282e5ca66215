"""The session's image gate: one decision for every image bound for the model.

Route (docs/computer-use.md §10): ``agent.image_input_mode`` ``native`` always sends pixels; ``text`` never does;
``auto`` sends pixels when the session's current model has vision and no ``auxiliary.vision`` model is configured.
Otherwise the auxiliary vision model (when configured) describes the images in one bounded request, with the long
edge scaled to at most 1456 px and the scale factor stated so coordinates can be given in original pixels; when
that fails, or nothing describes images, the caller's ``fallback`` (for a screenshot: its element list) or a note
stands in. Native pixels are re-encoded to fit ``vision.embed_target_bytes`` with the long edge at most 1568 px,
at most 4 per call, off the event loop.

When images reach the model as text although pixels were meant (no vision and nothing to describe them, or the
auxiliary model failed), the user is told once per session and reason (``notify``, a ``Notice``).

It deliberately knows nothing about where images come from (screenshots, MCP results, prompts), nor about
providers: the session hands it the current model's vision (``VisionModel``) and a ``Describer`` for the
auxiliary route (``hermes_acp.providers.describe`` makes one from the catalog).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import anyio
import anyio.to_thread
import structlog

from hermes_acp.config import Settings
from hermes_acp.core import ImagePart, TextPart
from hermes_acp.core.notice import Notice
from hermes_acp.errors import HermesError

from .codec import Fitted, ImageDecodeError, fit

__all__ = [
    "AUX_MAX_EDGE",
    "MAX_IMAGES",
    "NATIVE_MAX_EDGE",
    "Describer",
    "GatedImages",
    "ImageGate",
    "ImageRoute",
    "SessionImageGate",
    "VisionModel",
]

NATIVE_MAX_EDGE = 1568
AUX_MAX_EDGE = 1456
MAX_IMAGES = 4
AUX_TIMEOUT_S = 60.0
AUX_MAX_OUTPUT_TOKENS = 1024
AUX_SYSTEM = (
    "You describe images for an assistant that cannot see them. Be factual and compact: visible text verbatim, "
    "controls and their state, anything unusual. Give positions as pixel coordinates in the ORIGINAL image when "
    "asked to."
)
_log = structlog.get_logger("hermes_acp.images")

ImageRoute = Literal["native", "auxiliary", "text"]
"""How images reach the session's model: as pixels, as an auxiliary vision model's description, or as text only."""


@dataclass(frozen=True, slots=True)
class GatedImages:
    """What the gate made of some images: the parts for the model, in order, and how each image went."""

    parts: list[TextPart | ImagePart]
    route: ImageRoute
    scales: tuple[float | None, ...] = ()
    """Per input image: delivered width / original width when its pixels reached the model, else None."""


class ImageGate(Protocol):
    """The one decision on how images reach the model (tool results, MCP images, prompt images alike).

    Inputs are ``agent.image_input_mode``, whether the session's current model has vision, and
    ``auxiliary.vision``. Pixels are re-encoded to fit ``vision.embed_target_bytes`` (long edge at most 1568 px,
    at most 4 per call) off the event loop; the auxiliary route asks the auxiliary vision model for text; without
    either, ``fallback`` (or a note) stands in for the image.
    """

    def route(self) -> ImageRoute: ...

    async def admit(
        self,
        images: Sequence[ImagePart],
        *,
        purpose: str,
        fallback: str | None = None,
        hint: str | None = None,
    ) -> GatedImages:
        """Route ``images`` (``purpose`` says what they show; ``hint`` is extra context for a describing model)."""
        ...


class VisionModel(Protocol):
    """What the gate needs of the session's current model (a catalog model has both)."""

    @property
    def id(self) -> str: ...

    @property
    def vision(self) -> bool: ...


class Describer(Protocol):
    """The auxiliary vision model: one request that turns images into text (raises ``HermesError`` on failure)."""

    @property
    def id(self) -> str: ...

    async def describe(
        self, prompt: str, images: Sequence[ImagePart], *, system: str, max_output_tokens: int
    ) -> str: ...


class SessionImageGate:
    def __init__(
        self,
        settings: Settings,
        *,
        model: Callable[[], VisionModel | None],
        describer: Describer | None = None,
        aux_timeout_s: float = AUX_TIMEOUT_S,
    ):
        self._settings = settings
        self._model = model
        self._describer = describer
        """The auxiliary vision model; None when ``auxiliary.vision`` names none the catalog has."""
        self._aux_timeout_s = aux_timeout_s
        self.notify: Callable[[Notice], Awaitable[None]] | None = None
        """Where a downgrade is told (the session sets it); told once per reason."""
        self._told: set[str] = set()

    @property
    def embed_target_bytes(self) -> int:
        return self._settings.vision.embed_target_bytes

    def route(self) -> ImageRoute:
        mode = self._settings.agent.image_input_mode
        model = self._model()
        if mode == "native" or (
            mode == "auto" and model is not None and model.vision and self._settings.auxiliary.vision.model is None
        ):
            return "native"
        return "auxiliary" if self._describer is not None else "text"

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
            aux = self._describer
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
        aux = self._describer
        if aux is None:
            return None
        parts: list[ImagePart] = []
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
        try:
            with anyio.fail_after(self._aux_timeout_s):
                text = await aux.describe(prompt, parts, system=AUX_SYSTEM, max_output_tokens=AUX_MAX_OUTPUT_TOKENS)
        except (HermesError, TimeoutError) as exc:
            _log.warning("auxiliary vision failed", model=aux.id, error=str(exc))
            return None
        if not text.strip():
            return None
        return TextPart(
            text=f"[{purpose}, described by the auxiliary vision model {aux.id}; coordinates are original pixels]\n"
            f"{text.strip()}"
        )
