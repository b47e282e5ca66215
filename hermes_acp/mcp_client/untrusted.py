"""Cleaning what an MCP server says before the model or the editor sees it: hidden text, reserved metadata, size.

- ``strip_unicode_tags``: Unicode TAG characters (U+E0000–U+E007F) are invisible and can smuggle instructions
  past a reader, so they are removed, except inside a valid emoji tag sequence: U+1F3F4 (black flag), a
  subdivision code in TAG letters/digits (``gbeng``, ``gbsct``, ``usca``: two letters then one to four letters
  or digits), then CANCEL TAG (U+E007F). Those are flags such as England's and render as one glyph.
- ``public_meta``: a result's ``_meta`` minus keys whose prefix is reserved by MCP (a label ``mcp`` or
  ``modelcontextprotocol`` followed by at least one more label before the ``/``, e.g. ``mcp.dev/x``,
  ``api.modelcontextprotocol.org/x``; not ``mcp/x``).
- ``MAX_RESULT_CHARS`` and ``RESULT_HEAD_SHARE``: the text one result may give the model, and the share of it
  kept from the start when it is cut (40 %; the rest from the end); the tools' ``cap_middle`` does the cutting.

Pure functions; nothing here knows the mcp SDK.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_RESULT_CHARS", "RESULT_HEAD_SHARE", "public_meta", "strip_unicode_tags"]

MAX_RESULT_CHARS = 100_000
"""Text one MCP result may give the model (about 25k tokens); the rest is cut with a note."""
RESULT_HEAD_SHARE = 0.4
_TAG_RUN = re.compile("[\U000e0000-\U000e007f]+")
_FLAG_TAGS = re.compile("[\U000e0061-\U000e007a]{2}[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,4}\U000e007f")
_BLACK_FLAG = "\U0001f3f4"
_RESERVED_LABELS = frozenset({"mcp", "modelcontextprotocol"})


def strip_unicode_tags(text: str) -> str:
    if not any("\U000e0000" <= ch <= "\U000e007f" for ch in text):
        return text

    def keep_flags(match: re.Match[str]) -> str:
        run = match.group(0)
        start = match.start()
        flag = _FLAG_TAGS.match(run) if start > 0 and text[start - 1] == _BLACK_FLAG else None
        return flag.group(0) if flag else ""

    return _TAG_RUN.sub(keep_flags, text)


def _reserved(key: str) -> bool:
    prefix, slash, _ = key.partition("/")
    if not slash:
        return False
    labels = prefix.lower().split(".")
    return any(label in _RESERVED_LABELS for label in labels[:-1])


def public_meta(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    if not meta:
        return {}
    return {key: value for key, value in meta.items() if not _reserved(key)}
