"""Cleaning what an MCP server says before the model or the editor sees it: reserved metadata and size.

Hidden text is the job of the one sanitizer (``hermes_acp.core.sanitize``).

- ``public_meta``: a result's ``_meta`` minus keys whose prefix is reserved by MCP (a label ``mcp`` or
  ``modelcontextprotocol`` followed by at least one more label before the ``/``, e.g. ``mcp.dev/x``,
  ``api.modelcontextprotocol.org/x``; not ``mcp/x``).
- ``MAX_RESULT_CHARS`` and ``RESULT_HEAD_SHARE``: the text one result may give the model, and the share of it
  kept from the start when it is cut (40 %; the rest from the end); the tools' ``cap_middle`` does the cutting.

Pure functions; nothing here knows the mcp SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_RESULT_CHARS", "RESULT_HEAD_SHARE", "public_meta"]

MAX_RESULT_CHARS = 100_000
"""Text one MCP result may give the model (about 25k tokens); the rest is cut with a note."""
RESULT_HEAD_SHARE = 0.4
_RESERVED_LABELS = frozenset({"mcp", "modelcontextprotocol"})


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
