"""An MCP ``tools/call`` result (its wire shape, a dict) as a ``ToolOutcome``: parts for the model, blocks for the
editor, ``raw_output`` for the record.

Text (and text resources) is cleaned by the one sanitizer (``core.sanitize``) and capped (``untrusted``); the model
is told when text was cut. Images are saved under ``<cache_dir>/images/``: the model gets an ``ImagePart`` labelled
with the saved path (the request builder turns it into a note for models without vision), the editor an
``ImageBlock``. Audio, binary resources and unknown blocks become one-line markers. A result the transport cut (an
answer over the size of one message, ``_bounded``) says so at its end. ``structuredContent`` is shown
to the model only when the result has no text. ``raw_output`` carries ``structuredContent`` and the ``_meta`` keys
that are not reserved by MCP. ``isError`` makes a failed outcome. Nothing here knows the mcp SDK.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_acp.core import DisplayBlock, ImageBlock, ImagePart, ResourceBlock, ResourceLinkBlock, TextBlock, TextPart
from hermes_acp.core.sanitize import clean_text
from hermes_acp.errors import ErrorCode
from hermes_acp.tools._text import cap_middle
from hermes_acp.tools.base import ToolOutcome

from ._bounded import CUT_KEY, MAX_MESSAGE_BYTES
from .images import decode_image, save_image
from .untrusted import MAX_RESULT_CHARS, RESULT_HEAD_SHARE, public_meta

if TYPE_CHECKING:
    from hermes_acp.images.gate import ImageGate

__all__ = ["MAX_IMAGE_BYTES", "outcome_from_result", "outcome_from_text"]

MAX_IMAGE_BYTES = 4 * 1024 * 1024
"""An image larger than this is saved but not embedded (the model and the editor get its path)."""
ERROR_CODE: ErrorCode = "mcp_tool_error"
_IMAGE_PURPOSE = "an image returned by an MCP tool"


async def outcome_from_result(
    result: Mapping[str, Any],
    *,
    cache_dir: Path,
    limit: int = MAX_RESULT_CHARS,
    gate: ImageGate | None = None,
) -> ToolOutcome[Any]:
    """The tool's result for the model and the editor. Images reach the model through the session's image ``gate``
    (the one of docs/computer-use.md §10, shared with screenshots and prompt images); the editor gets them unchanged."""
    texts: list[str] = []
    images: list[ImagePart] = []
    blocks: list[DisplayBlock] = []
    content = result.get("content")
    for block in content if isinstance(content, list) else []:
        if isinstance(block, Mapping):
            await _convert_block(block, cache_dir, texts, images, blocks)
    structured = result.get("structuredContent")
    if not texts and structured is not None:
        texts.append(clean_text(json.dumps(structured, ensure_ascii=False)))
    failed = bool(result.get("isError"))
    if not texts and not images:
        texts.append("(the tool reported an error without details)" if failed else "(no output)")
    text, _ = cap_middle("\n".join(texts), limit, head_share=RESULT_HEAD_SHARE)
    meta = public_meta(result.get("_meta") if isinstance(result.get("_meta"), Mapping) else None)
    cut = meta.pop(CUT_KEY, None)
    if isinstance(cut, Mapping):
        text += (
            f"\n[The server's answer was {cut.get('total', 0):,} bytes, over the limit of {MAX_MESSAGE_BYTES:,} for one"
            f" message: only its first {cut.get('read', 0):,} bytes were read, and this result is cut there. Ask the"
            " tool for less at once if it can.]"
        )
    raw: dict[str, Any] = {}
    if structured is not None:
        raw["structuredContent"] = structured
    if meta:
        raw["_meta"] = meta
    model_images: list[TextPart | ImagePart] = list(images)
    if gate is not None and images:
        model_images = (await gate.admit(images, purpose=_IMAGE_PURPOSE)).parts
    return ToolOutcome(
        parts=[TextPart(text=text), *model_images],
        content=[TextBlock(text=text), *blocks],
        raw_output=raw or None,
        failed=failed,
        error_code=ERROR_CODE if failed else None,
    )


def outcome_from_text(text: str, *, raw_output: Any = None, limit: int = MAX_RESULT_CHARS) -> ToolOutcome[Any]:
    """A plain text outcome (resource and prompt helpers), cleaned and capped like tool results."""
    capped, _ = cap_middle(clean_text(text), limit, head_share=RESULT_HEAD_SHARE)
    return ToolOutcome.text(capped, raw_output=raw_output)


async def _convert_block(
    block: Mapping[str, Any],
    cache_dir: Path,
    texts: list[str],
    images: list[ImagePart],
    blocks: list[DisplayBlock],
) -> None:
    kind = block.get("type")
    if kind == "text":
        texts.append(clean_text(str(block.get("text", ""))))
    elif kind == "image":
        await _image(block, cache_dir, texts, images, blocks)
    elif kind == "resource":
        _embedded(block.get("resource"), texts, blocks)
    elif kind == "resource_link":
        uri = str(block.get("uri", ""))
        name = clean_text(str(block.get("name") or uri))
        texts.append(f"[resource link: {uri} ({name})]")
        media = block.get("mimeType")
        blocks.append(ResourceLinkBlock(uri=uri, name=name, media_type=media if isinstance(media, str) else None))
    elif kind == "audio":
        texts.append(f"[audio ({block.get('mimeType', 'unknown type')}) not shown: audio is not supported]")
    else:
        texts.append(f"[MCP content dropped: unsupported block (type={kind!r})]")


async def _image(
    block: Mapping[str, Any],
    cache_dir: Path,
    texts: list[str],
    images: list[ImagePart],
    blocks: list[DisplayBlock],
) -> None:
    media_type = str(block.get("mimeType") or "image/png")
    data = block.get("data")
    raw = decode_image(data) if isinstance(data, str) else None
    if raw is None:
        texts.append(f"[image ({media_type}) dropped: its data is not valid base64]")
        return
    try:
        path = await save_image(cache_dir, raw, media_type)
    except OSError as exc:
        texts.append(f"[image ({media_type}) could not be saved: {exc.strerror or exc}]")
        return
    if len(raw) > MAX_IMAGE_BYTES or not media_type.startswith("image/"):
        texts.append(f"[image saved to {path} ({len(raw):,} bytes, too large to show)]")
        return
    assert isinstance(data, str)
    images.append(ImagePart(media_type=media_type, data=data, label=str(path)))
    blocks.append(ImageBlock(media_type=media_type, data=data, uri=path.as_uri()))


def _embedded(resource: object, texts: list[str], blocks: list[DisplayBlock]) -> None:
    if not isinstance(resource, Mapping):
        texts.append("[MCP content dropped: an embedded resource without contents]")
        return
    uri = str(resource.get("uri", ""))
    media = resource.get("mimeType")
    media_type = media if isinstance(media, str) else None
    text = resource.get("text")
    if isinstance(text, str):
        clean = clean_text(text)
        texts.append(f"[resource {uri}]\n{clean}")
        blocks.append(ResourceBlock(uri=uri, media_type=media_type, text=clean))
        return
    texts.append(f"[binary resource {uri} ({media_type or 'unknown type'}) not shown]")
