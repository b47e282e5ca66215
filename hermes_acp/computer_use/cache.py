"""The two computer_use caches: screenshots in ``<cache>/images/`` and full element trees in
``<cache>/computer_use/``, each kept to the newest ``KEEP`` files (hermes-acp.md §5).

Writes run off the event loop. Names carry a fresh uuid, so two sessions never overwrite each other; pruning
deletes the oldest files by modification time and ignores files that vanish meanwhile.

It deliberately knows nothing about what the files contain beyond bytes and JSON.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import anyio.to_thread

__all__ = ["KEEP", "save_elements", "save_screenshot"]

KEEP = 20
_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg"}


def _write(folder: Path, name: str, data: bytes, keep: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    tmp = folder / f".{name}.tmp"
    tmp.write_bytes(data)
    tmp.replace(path)
    _prune(folder, keep)
    return path


def _prune(folder: Path, keep: int) -> None:
    files = []
    for entry in folder.iterdir():
        if entry.is_file() and not entry.name.startswith("."):
            try:
                files.append((entry.stat().st_mtime_ns, entry.name, entry))
            except FileNotFoundError:
                continue
    files.sort()
    for _, _, entry in files[: max(0, len(files) - keep)]:
        entry.unlink(missing_ok=True)


async def save_screenshot(cache_dir: Path, data: bytes, media_type: str, *, keep: int = KEEP) -> Path:
    name = f"computer_use_{uuid.uuid4().hex}.{_EXTENSIONS.get(media_type, 'png')}"
    return await anyio.to_thread.run_sync(_write, cache_dir / "images", name, data, keep)


async def save_elements(cache_dir: Path, document: dict[str, Any], *, keep: int = KEEP) -> Path:
    data = json.dumps(document, ensure_ascii=False, indent=1).encode("utf-8")
    name = f"elements_{uuid.uuid4().hex}.json"
    return await anyio.to_thread.run_sync(_write, cache_dir / "computer_use", name, data, keep)
