"""Images from MCP results: decoded from base64 and kept in the one image cache (``hermes_acp.images.cache``).

They are of the kind ``mcp_image`` there: named by content (``mcp-<sha256 prefix>.<ext>`` under
``<cache_dir>/images/``), so the same image is stored once, and the newest ``MAX_SAVED_IMAGES`` of them are kept;
the cache's one pruning rule never touches the files other writers put there. Nothing here knows the mcp SDK or
what the image shows.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path

from hermes_acp.images import cache as image_cache

__all__ = ["MAX_SAVED_IMAGES", "decode_image", "save_image"]

MAX_SAVED_IMAGES = image_cache.KEEP


def decode_image(data: str) -> bytes | None:
    """The bytes of a base64 image, or None when it is not valid base64 (or empty)."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw or None


async def save_image(cache_dir: Path, raw: bytes, media_type: str) -> Path:
    """Store ``raw`` in the cache's images (pruning older MCP images); returns the file's path."""
    return await image_cache.save_image(cache_dir, "mcp_image", raw, media_type)
