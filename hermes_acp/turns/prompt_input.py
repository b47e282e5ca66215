"""Turn the editor's prompt content into the model's user message, losing nothing silently.

Text and images pass through. ``resource_link``s to ``file://`` paths inside the session's directories are read;
outside them the user is asked first (refused in ``read_only``). Embedded resources are inlined (text) or passed as
images (image blobs). Audio and other binary content are not forwarded, and the user gets a notice that says so.
The reads outside the directories are real, announced tool calls of kind ``read`` so the permission prompt has a
card to attach to. The text of attachments (embedded, or read from a linked file) and the names of linked resources
pass the one sanitizer (``core.sanitize``); removals are logged. This module knows the neutral display blocks, not
ACP.
"""

from __future__ import annotations

import base64
import codecs
import mimetypes
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

import anyio
import structlog

from hermes_acp.core import (
    AudioBlock,
    DisplayBlock,
    ImageBlock,
    ImagePart,
    ResourceBlock,
    ResourceLinkBlock,
    TerminalBlock,
    TextBlock,
    TextPart,
    UserMessage,
)
from hermes_acp.core.sanitize import sanitize_text
from hermes_acp.errors import PermissionDeniedError
from hermes_acp.tools.context import ApprovalRequest, Workspace

if TYPE_CHECKING:
    from hermes_acp.images.gate import ImageGate

__all__ = ["MAX_ATTACHMENT_BYTES", "MAX_IMAGE_BYTES", "ConvertedPrompt", "OutsideReadAsker", "convert_prompt"]

MAX_ATTACHMENT_BYTES = 256 * 1024
MAX_IMAGE_BYTES = 10 * 1024 * 1024
_log = structlog.get_logger("hermes_acp.turns")
OutsideReadAsker = Callable[[Path, ApprovalRequest], Awaitable[None]]
"""Announce a read of ``path`` as a tool call and run the approval flow; raises ``PermissionDeniedError``."""


@dataclass
class ConvertedPrompt:
    message: UserMessage
    notices: list[str] = field(default_factory=list)


async def convert_prompt(
    blocks: list[DisplayBlock],
    *,
    workspace: Workspace,
    ask_outside: OutsideReadAsker,
    images: ImageGate | None = None,
) -> ConvertedPrompt:
    parts: list[TextPart | ImagePart] = []
    notices: list[str] = []
    for block in blocks:
        if isinstance(block, AudioBlock):
            notices.append(
                "Audio in the prompt is not forwarded to the model (no audio input support); it was left out."
            )
        elif isinstance(block, TextBlock):
            parts.append(TextPart(text=block.text))
        elif isinstance(block, ImageBlock):
            parts.append(ImagePart(media_type=block.media_type, data=block.data, label=block.uri or "prompt image"))
        elif isinstance(block, ResourceBlock):
            parts.extend(_embedded(block, notices))
        elif isinstance(block, ResourceLinkBlock):
            parts.extend(await _linked(block, workspace, ask_outside, notices))
        elif isinstance(block, TerminalBlock):
            notices.append("A terminal reference in the prompt cannot be forwarded; it was left out.")
        else:
            notices.append(f"Prompt content of kind {block.kind!r} cannot be forwarded; it was left out.")
    if images is not None:
        parts = await _through_gate(parts, images)
    if not parts:
        parts.append(TextPart(text="(the prompt had no content the model can read)"))
    return ConvertedPrompt(message=UserMessage(parts=parts), notices=notices)


async def _through_gate(parts: list[TextPart | ImagePart], images: ImageGate) -> list[TextPart | ImagePart]:
    out: list[TextPart | ImagePart] = []
    for part in parts:
        if isinstance(part, ImagePart):
            gated = await images.admit([part], purpose=f"an image the user attached ({part.label or 'prompt image'})")
            out.extend(gated.parts)
        else:
            out.append(part)
    return out


def _embedded(block: ResourceBlock, notices: list[str]) -> list[TextPart | ImagePart]:
    if block.text is not None:
        return [TextPart(text=_attachment_text(block.uri, block.text))]
    mime = block.media_type or ""
    if block.blob is not None and mime.startswith("image/"):
        return [ImagePart(media_type=mime, data=block.blob, label=block.uri)]
    notices.append(f"The attachment {block.uri} is binary ({mime or 'unknown type'}) and was not forwarded.")
    return []


async def _linked(
    block: ResourceLinkBlock, workspace: Workspace, ask_outside: OutsideReadAsker, notices: list[str]
) -> list[TextPart | ImagePart]:
    parsed = urlparse(block.uri)
    if parsed.scheme not in ("file", ""):
        shown = _clean(f"{block.name} <{block.uri}>", block.uri)
        return [TextPart(text=f"[Linked resource: {shown} (not a local file; not read)]")]
    path = workspace.resolve(unquote(parsed.path))
    if not workspace.contains(path):
        request = ApprovalRequest(
            scope="read",
            title=f"Read attachment {path}",
            mutating=False,
            paths=(path,),
            raw_input={"uri": block.uri},
            reason="the attachment is outside the session's directories",
        )
        try:
            await ask_outside(path, request)
        except PermissionDeniedError as exc:
            notices.append(f"The attachment {path} was not read: {exc}")
            return [TextPart(text=f"[Attachment {path} not read: {exc}]")]
    mime = block.media_type or mimetypes.guess_type(path.name)[0] or ""
    image = mime.startswith("image/")
    limit = MAX_IMAGE_BYTES if image else MAX_ATTACHMENT_BYTES
    try:
        size, data = await anyio.to_thread.run_sync(_read_head, path, limit)
    except OSError as exc:
        notices.append(f"The attachment {path} could not be read: {exc.strerror or exc}")
        return [TextPart(text=f"[Attachment {path} could not be read]")]
    if image:
        if len(data) > MAX_IMAGE_BYTES:
            notices.append(f"The image {path} is larger than {MAX_IMAGE_BYTES // 2**20} MiB and was not forwarded.")
            return []
        return [ImagePart(media_type=mime, data=base64.b64encode(data).decode(), label=str(path))]
    try:
        # A character cut in two at the limit is left out, not taken for invalid UTF-8.
        text = codecs.getincrementaldecoder("utf-8")().decode(
            data[:MAX_ATTACHMENT_BYTES], final=len(data) <= MAX_ATTACHMENT_BYTES
        )
    except UnicodeDecodeError:
        notices.append(f"The attachment {path} is not UTF-8 text and was not forwarded.")
        return []
    if len(data) > MAX_ATTACHMENT_BYTES:
        total = f"{size} bytes" if size > MAX_ATTACHMENT_BYTES else f"more than {MAX_ATTACHMENT_BYTES} bytes"
        text += f"\n[... truncated: the file has {total}, only the first {MAX_ATTACHMENT_BYTES} are shown]"
    return [TextPart(text=_attachment_text(block.uri, text))]


def _read_head(path: Path, limit: int) -> tuple[int, bytes]:
    """The file's size and at most ``limit + 1`` bytes from its start: enough to tell it is over the limit, and
    never the whole of a large file (or of one that never ends)."""
    with path.open("rb") as file:
        return os.fstat(file.fileno()).st_size, file.read(limit + 1)


def _attachment_text(uri: str, text: str) -> str:
    return _clean(f"[Attached: {uri}]\n{text}", uri)


def _clean(text: str, uri: str) -> str:
    """Attachment text through the one sanitizer, what it removed logged."""
    clean, removals = sanitize_text(text)
    if removals:
        _log.warning("hidden text removed from an attachment", uri=sanitize_text(uri)[0], **removals.as_log())
    return clean
