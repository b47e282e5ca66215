"""Images from MCP results, saved under ``<cache_dir>/images/`` so the model and the user can refer to a file.

Files are named by content (``mcp-<sha256 prefix>.<ext>``), so the same image is stored once, and the folder keeps
at most ``MAX_SAVED_IMAGES`` of our files (the oldest go first; files other components put there are left
alone). Writing runs in a worker thread. Nothing here knows the mcp SDK or what the image shows.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from pathlib import Path

import anyio

__all__ = ["IMAGE_PREFIX", "MAX_SAVED_IMAGES", "decode_image", "save_image"]

MAX_SAVED_IMAGES = 20
IMAGE_PREFIX = "mcp-"
_EXTENSIONS = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/jpg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "image/svg+xml": ".svg",
    "image/bmp": ".bmp",
}


def decode_image(data: str) -> bytes | None:
    """The bytes of a base64 image, or None when it is not valid base64 (or empty)."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw or None


async def save_image(cache_dir: Path, raw: bytes, media_type: str) -> Path:
    """Store ``raw`` under ``cache_dir/images`` and prune old files; returns the file's path."""
    folder = cache_dir / "images"
    name = IMAGE_PREFIX + hashlib.sha256(raw).hexdigest()[:24] + _EXTENSIONS.get(media_type.lower(), ".bin")
    return await anyio.to_thread.run_sync(_write_and_prune, folder, folder / name, raw)


def _write_and_prune(folder: Path, path: Path, raw: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if path.exists():
        os.utime(path)
    else:
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(raw)
        os.replace(partial, path)
    ours: list[tuple[int, str, Path]] = []
    for entry in folder.iterdir():
        if entry.name.startswith(IMAGE_PREFIX) and not entry.name.endswith(".partial"):
            try:
                ours.append((entry.stat().st_mtime_ns, entry.name, entry))
            except FileNotFoundError:
                continue  # another session pruned it meanwhile
    ours.sort()
    for _, _, old in ours[: max(0, len(ours) - MAX_SAVED_IMAGES)]:
        if old != path:
            old.unlink(missing_ok=True)
    return path
