"""Reading what session lifecycle requests carry beyond the session: a client's ``systemPrompt`` and the
``archived`` filter of ``session/list`` (both unstable in ACP's 2.4.0 schema).

Both are strict where the schema is: a system prompt in a mode we do not support, with no content, or with a block
other than text is refused (-32602), never applied as something else; an archive filter other than ``exclude``,
``include`` or ``only`` (custom ``_`` values included) is refused rather than read as ``exclude``. Text from the
client passes the one sanitizer. No session logic here.
"""

from __future__ import annotations

from typing import get_args

from hermes_acp.core.sanitize import clean_text
from hermes_acp.errors import InvalidParamsError
from hermes_acp.storage.base import ArchiveFilter
from hermes_acp.turns.system_prompt import ClientSystemPrompt

from .wire import SystemPromptParam, TextContent

__all__ = ["MAX_SYSTEM_PROMPT_CHARS", "archive_filter", "client_system_prompt"]

MAX_SYSTEM_PROMPT_CHARS = 200_000
"""Longest client system prompt taken (it goes into every request of the session)."""
_FILTERS: tuple[str, ...] = get_args(ArchiveFilter)


def client_system_prompt(param: SystemPromptParam | None) -> ClientSystemPrompt | None:
    if param is None:
        return None
    if param.mode not in ("append", "override"):
        raise InvalidParamsError(
            f"systemPrompt.mode: {param.mode!r} is not supported; this agent supports append and override",
            field="systemPrompt.mode",
        )
    if not param.content:
        raise InvalidParamsError("systemPrompt.content: must not be empty", field="systemPrompt.content")
    texts = []
    for index, block in enumerate(param.content):
        if not isinstance(block, TextContent):
            raise InvalidParamsError(
                f"systemPrompt.content[{index}]: {block.type} blocks are not supported in a system prompt;"
                " send text blocks",
                field=f"systemPrompt.content[{index}]",
            )
        texts.append(clean_text(block.text))
    text = "\n\n".join(texts)
    if not text.strip():
        raise InvalidParamsError("systemPrompt.content: has no text", field="systemPrompt.content")
    if len(text) > MAX_SYSTEM_PROMPT_CHARS:
        raise InvalidParamsError(
            f"systemPrompt.content: {len(text):,} characters, over the {MAX_SYSTEM_PROMPT_CHARS:,} this agent takes",
            field="systemPrompt.content",
        )
    return ClientSystemPrompt("append" if param.mode == "append" else "override", text)


def archive_filter(raw: str | None) -> ArchiveFilter:
    if raw is None:
        return "exclude"
    for known in ("exclude", "include", "only"):
        if raw == known:
            return known
    raise InvalidParamsError(f"archived: {raw!r} is not supported; use one of {', '.join(_FILTERS)}", field="archived")
