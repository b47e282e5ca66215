"""The one cache of files the agent writes for the model and the user to point at: images and element documents.

Where: ``<cache>/images/`` holds images (computer_use screenshots, images from MCP results), ``<cache>/computer_use/``
the full element documents of captures. Prompt images are not written: they reach the model inline. A file is named
``<prefix><id>.<ext>``: the prefix says which kind of writer wrote it (``KINDS``), the id is fresh (a uuid) or, for
content that repeats (an MCP server's images), the content's hash: the same bytes are stored once and written again
only as a refresh of their date.

One pruning rule: after a write, its folder keeps the newest ``KEEP`` files of the kind written (newest by
modification time, then name; a write dates its file from the fine clock, so writes are ordered as they happened).
Files of other kinds, and files the agent did not write, are never touched, so no writer can delete another's. Each
write and its prune hold an advisory lock on the folder (``.lock``, ``flock``), so the sessions of one process and
the processes sharing one home never delete a file another has just written or refreshed; the lock is awaited at
most ``LOCK_WAIT_S`` (a stalled machine, a frozen process holding it), after which the file is written and the
prune skipped (nothing is lost; the next write prunes). Without the lock a file of content that repeats is written
under a fresh id too, never refreshed in place: a prune that listed the old file before the refresh would otherwise
take the name the write is about to return. Files are written whole (a hidden temporary name, then a rename).
Everything here blocks: ``save`` runs it in a worker thread.

It knows nothing about what the files show.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio.to_thread

__all__ = ["KEEP", "KINDS", "LOCK_WAIT_S", "CacheKind", "save", "save_image", "save_json"]

KEEP = 20
"""Files of one kind a folder keeps."""
LOCK_WAIT_S = 2.0
"""How long a write waits for another writer of the same folder before it skips its prune."""
_LOCK_POLL_S = 0.005

CacheKind = Literal["screenshot", "mcp_image", "elements"]


@dataclass(frozen=True, slots=True)
class _Kind:
    folder: str
    prefix: str
    by_content: bool
    """Named by the content's hash (stored once) instead of a fresh id."""


KINDS: dict[CacheKind, _Kind] = {
    "screenshot": _Kind("images", "computer_use_", by_content=False),
    "mcp_image": _Kind("images", "mcp-", by_content=True),
    "elements": _Kind("computer_use", "elements_", by_content=False),
}
_IMAGE_EXTENSIONS = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/jpg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/svg+xml": "svg",
    "image/bmp": "bmp",
}


async def save(cache_dir: Path, kind: CacheKind, data: bytes, *, extension: str, keep: int = KEEP) -> Path:
    """Store ``data`` as a file of ``kind`` under ``cache_dir`` and prune that kind; returns the file's path."""
    spec = KINDS[kind]
    folder = cache_dir / spec.folder
    return await anyio.to_thread.run_sync(_write_and_prune, folder, spec, data, extension, keep)


async def save_image(cache_dir: Path, kind: CacheKind, data: bytes, media_type: str, *, keep: int = KEEP) -> Path:
    """``save`` with the extension of ``media_type`` (``bin`` when it is not an image type we know)."""
    extension = _IMAGE_EXTENSIONS.get(media_type.lower(), "bin")
    return await save(cache_dir, kind, data, extension=extension, keep=keep)


async def save_json(cache_dir: Path, kind: CacheKind, document: Any, *, keep: int = KEEP) -> Path:
    """``save`` of a JSON document (UTF-8, indented by one)."""
    data = json.dumps(document, ensure_ascii=False, indent=1).encode("utf-8")
    return await save(cache_dir, kind, data, extension="json", keep=keep)


def _write_and_prune(folder: Path, spec: _Kind, data: bytes, extension: str, keep: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    by_content = hashlib.sha256(data).hexdigest()[:24] if spec.by_content else None  # hashed before the lock
    with _folder_lock(folder) as locked:
        ident = by_content if by_content is not None and locked else uuid.uuid4().hex
        path = folder / f"{spec.prefix}{ident}.{extension}"
        # The file system's own clock is coarse (a few milliseconds on ext4): files written within one tick would
        # tie and be ordered by their random names, so a file just written could be taken by a concurrent prune.
        # The date is set from the fine clock instead, on the temporary file before the rename, so the file never
        # shows under its name with the coarse date; under the lock, writes are dated in the order they happen.
        now = time.time_ns()
        if path.exists():  # a repeated image, under the lock: a refresh of its date
            os.utime(path, ns=(now, now))
        else:
            partial = folder / f".{path.name}.partial"
            partial.write_bytes(data)
            os.utime(partial, ns=(now, now))
            os.replace(partial, path)
        if locked:
            _prune(folder, spec.prefix, keep, path)
    return path


def _prune(folder: Path, prefix: str, keep: int, written: Path) -> None:
    """The rule: the newest ``keep`` files with ``prefix`` stay (the one just written always does)."""
    ours: list[tuple[int, str, Path]] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(prefix):
                try:
                    ours.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name, Path(entry.path)))
                except FileNotFoundError:
                    continue
    ours.sort()
    for _, _, old in ours[: max(0, len(ours) - keep)]:
        if old != written:
            old.unlink(missing_ok=True)


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[bool]:
    """Hold the folder's advisory lock (True), or give up after ``LOCK_WAIT_S`` (False)."""
    fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(_LOCK_POLL_S)
                continue
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            return
    finally:
        os.close(fd)
