"""The one cache of files the agent writes for the model and the user to point at: images and element documents.

Where: ``<cache>/images/`` holds images (computer_use screenshots, images from MCP results), ``<cache>/computer_use/``
the full element documents of captures. Prompt images are not written: they reach the model inline. A file is named
``<prefix><id>.<ext>``: the prefix says which kind of writer wrote it (``KINDS``), the id is fresh (a uuid) or, for
content that repeats (an MCP server's images), the content's hash: the same bytes are stored once and written again
only as a refresh of their date.

One pruning rule: after a write, its folder keeps the newest ``KEEP`` files of the kind written (newest by modification
time, then name; a write dates its file from the fine clock, so writes are ordered as they happened), and every file of
that kind younger than ``GRACE_S`` on that same clock (a path just handed to the model or the user stays valid however
many files other sessions write meanwhile; a clock set back makes files look young, never old). Files of other kinds,
and files the agent did not write, are never touched, so no writer can delete another's. Each write and its prune hold
an advisory lock on the folder (``.lock``, ``platform.locks``), and the prune checks each file's date again under it
before it deletes the file, so the sessions of one process and the processes sharing one home never delete a file
another has just written or refreshed; the lock is awaited at most ``lock_wait_s`` (``LOCK_WAIT_S`` unless the caller
passes another: a stalled machine, a frozen process holding it), after which the file is written and the prune skipped
(nothing is lost; the next write prunes). Without the lock a file of content that repeats is written under a fresh id
too, never refreshed in place: a prune that listed the old file before the refresh would otherwise take the name the
write is about to return. Files are written whole (a hidden temporary name, then a rename), ``0600`` in folders
``0700``, and the folder is reached from the cache folder without following a link (``hermes_acp.anchored``). Everything
here blocks: ``save`` runs it in a worker thread.

It knows nothing about what the files show.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

import anyio.to_thread

from hermes_acp import anchored
from hermes_acp.platform import locks

__all__ = ["GRACE_S", "KEEP", "KINDS", "LOCK_WAIT_S", "CacheKind", "save", "save_image", "save_json"]

KEEP = 20
"""Files of one kind a folder keeps."""
GRACE_S = 60.0
"""Files of a kind younger than this are never pruned, however many newer ones there are."""
LOCK_WAIT_S = 2.0
"""How long a write waits for another writer of the same folder before it skips its prune."""

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


async def save(
    cache_dir: Path,
    kind: CacheKind,
    data: bytes,
    *,
    extension: str,
    keep: int = KEEP,
    grace_s: float = GRACE_S,
    lock_wait_s: float = LOCK_WAIT_S,
) -> Path:
    """Store ``data`` as a file of ``kind`` under ``cache_dir`` and prune that kind; returns the file's path.
    ``lock_wait_s``: how long to wait for another writer of the folder before the prune is skipped."""
    spec = KINDS[kind]
    write = partial(
        _write_and_prune, cache_dir, spec, data, extension, keep=keep, grace_s=grace_s, lock_wait_s=lock_wait_s
    )
    return await anyio.to_thread.run_sync(write)


async def save_image(
    cache_dir: Path,
    kind: CacheKind,
    data: bytes,
    media_type: str,
    *,
    keep: int = KEEP,
    grace_s: float = GRACE_S,
    lock_wait_s: float = LOCK_WAIT_S,
) -> Path:
    """``save`` with the extension of ``media_type`` (``bin`` when it is not an image type we know)."""
    extension = _IMAGE_EXTENSIONS.get(media_type.lower(), "bin")
    return await save(cache_dir, kind, data, extension=extension, keep=keep, grace_s=grace_s, lock_wait_s=lock_wait_s)


async def save_json(
    cache_dir: Path,
    kind: CacheKind,
    document: Any,
    *,
    keep: int = KEEP,
    grace_s: float = GRACE_S,
    lock_wait_s: float = LOCK_WAIT_S,
) -> Path:
    """``save`` of a JSON document (UTF-8, indented by one)."""
    data = json.dumps(document, ensure_ascii=False, indent=1).encode("utf-8")
    return await save(cache_dir, kind, data, extension="json", keep=keep, grace_s=grace_s, lock_wait_s=lock_wait_s)


def _write_and_prune(
    cache_dir: Path, spec: _Kind, data: bytes, extension: str, *, keep: int, grace_s: float, lock_wait_s: float
) -> Path:
    by_content = hashlib.sha256(data).hexdigest()[:24] if spec.by_content else None  # hashed before the lock
    with anchored.folder(cache_dir, cache_dir / spec.folder, make=anchored.PRIVATE_FOLDER) as held:
        with _folder_lock(held, lock_wait_s) as locked:
            ident = by_content if by_content is not None and locked else uuid.uuid4().hex
            name = f"{spec.prefix}{ident}.{extension}"
            # The file system's own clock is coarse (a few milliseconds on ext4): files written within one tick would
            # tie and be ordered by their random names, so a file just written could be taken by a concurrent prune.
            # The date is set from the fine clock instead, on the temporary file before the rename, so the file never
            # shows under its name with the coarse date; under the lock, writes are dated in the order they happen.
            now = time.time_ns()
            facts = held.lstat(name)
            if facts is not None and stat.S_ISREG(facts.st_mode):  # a repeated image, under the lock: a refresh
                held.set_times(name, now)
            else:
                anchored.write_into(held, name, data, durable=False, keep_mode=False, times_ns=now)
            if locked:
                _prune(held, spec.prefix, keep, name, int(grace_s * 1e9))
        return held.path / name


def _prune(held: anchored.Folder, prefix: str, keep: int, written: str, grace_ns: int) -> None:
    """The rule: the newest ``keep`` files with ``prefix`` stay, and so does every one younger than ``grace_ns`` (the
    one just written always does). Runs under the folder's lock; each file's date is checked again before it goes."""
    ours: list[tuple[int, str]] = []
    for name in held.names():
        if name.startswith(prefix):
            facts = held.lstat(name)
            if facts is not None and stat.S_ISREG(facts.st_mode):
                ours.append((facts.st_mtime_ns, name))
    ours.sort()
    young_after = time.time_ns() - grace_ns
    for dated, name in ours[: max(0, len(ours) - keep)]:
        if name == written or dated > young_after:
            continue
        again = held.lstat(name)
        if again is None or again.st_mtime_ns != dated or not stat.S_ISREG(again.st_mode):
            continue  # refreshed (or replaced) since it was listed: it is not the file the rule chose
        with contextlib.suppress(FileNotFoundError):
            held.unlink(name)


@contextlib.contextmanager
def _folder_lock(held: anchored.Folder, wait_s: float) -> Iterator[bool]:
    """Hold the folder's advisory lock (True), or give up after ``wait_s`` (False)."""
    fd = held.open(".lock", os.O_RDWR | os.O_CREAT, anchored.PRIVATE_FILE)
    try:
        with locks.held(fd, wait_s=wait_s) as locked:
            yield locked
    finally:
        os.close(fd)
