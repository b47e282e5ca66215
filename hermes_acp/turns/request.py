"""Build one model request from the session's history and the tool surface derived for this request.

Two context economies happen here, on the way out (the stored history keeps everything): only the newest
``IMAGE_WINDOW`` images from tool results stay images, older ones become a one-line placeholder; and images never
reach a model the image gate does not send pixels to (they become a note): by default a model without vision, or
whatever the session's gate decides (``native_images``; ``agent.image_input_mode = "native"`` sends pixels even to
a model the catalog does not mark as vision). Neither changes the system prompt or the tool schemas, which stay
byte-stable across a session.
"""

from __future__ import annotations

from collections.abc import Sequence

from hermes_acp.config import Effort
from hermes_acp.core import ImagePart, Message, TextPart, ToolResultMessage, UserMessage
from hermes_acp.providers.base import ProviderRequest, ToolSpec
from hermes_acp.providers.catalog import CatalogModel
from hermes_acp.tools.base import AnyTool

__all__ = ["IMAGE_WINDOW", "build_request", "tool_specs"]

IMAGE_WINDOW = 3


def tool_specs(tools: Sequence[AnyTool]) -> list[ToolSpec]:
    return [ToolSpec(name=t.name, description=t.description, input_schema=t.input_schema) for t in tools]


def build_request(
    *,
    model: CatalogModel,
    system: str,
    history: Sequence[Message],
    tools: Sequence[AnyTool],
    native_images: bool | None = None,
    effort: Effort | None = None,
) -> ProviderRequest:
    """``native_images``: the image gate's answer for this model (``gate.route() == "native"``); None = vision.
    ``effort``: the session's thinking effort (None sends none; the provider sends it only if the model lists it)."""
    vision = model.vision if native_images is None else native_images
    return ProviderRequest(
        model=model.model,
        system=system,
        messages=_economise_images(history, vision=vision, model_name=model.id),
        tools=tool_specs(tools),
        max_output_tokens=model.max_output_tokens,
        effort=effort,
    )


def _economise_images(history: Sequence[Message], *, vision: bool, model_name: str) -> list[Message]:
    keep: set[tuple[int, int]] = set()
    budget = IMAGE_WINDOW
    for m_index in range(len(history) - 1, -1, -1):
        message = history[m_index]
        if not isinstance(message, ToolResultMessage):
            continue
        for p_index in range(len(message.parts) - 1, -1, -1):
            if isinstance(message.parts[p_index], ImagePart) and budget > 0:
                keep.add((m_index, p_index))
                budget -= 1
    out: list[Message] = []
    for m_index, message in enumerate(history):
        if isinstance(message, ToolResultMessage | UserMessage) and any(
            isinstance(p, ImagePart) for p in message.parts
        ):
            parts: list[TextPart | ImagePart] = []
            for p_index, part in enumerate(message.parts):
                if not isinstance(part, ImagePart):
                    parts.append(part)
                elif not vision:
                    parts.append(TextPart(text=f"[image {part.label or ''} not shown: {model_name} has no vision]"))
                elif isinstance(message, UserMessage) or (m_index, p_index) in keep:
                    parts.append(part)
                else:
                    parts.append(TextPart(text=f"[earlier image omitted: {part.label or 'tool result image'}]"))
            out.append(message.model_copy(update={"parts": parts}))
        else:
            out.append(message)
    return out
