"""The one image cache: screenshots, MCP images and element documents under one pruning rule, written and pruned
concurrently by several sessions, with nothing the rule keeps ever lost and no writer deleting another's files."""

from __future__ import annotations

import random
from pathlib import Path

import anyio
import pytest

from hermes_acp.images import cache as image_cache
from hermes_acp.images.cache import KEEP, CacheKind, save, save_image, save_json

pytestmark = pytest.mark.anyio

ROUNDS = 30
SESSIONS = 3


def files(folder: Path, prefix: str) -> set[Path]:
    return {p for p in folder.iterdir() if p.name.startswith(prefix)}


Dated = dict[CacheKind, dict[Path, tuple[int, str]]]


async def _write_concurrently(tmp_path: Path) -> Dated:
    """``SESSIONS`` writers of every kind at once; each file's date and name the moment its write returned."""
    dated: Dated = {"screenshot": {}, "mcp_image": {}, "elements": {}}

    async def session(number: int) -> None:
        rng = random.Random(number)
        for i in range(ROUNDS):
            shot_bytes = f"shot {number}/{i}".encode()
            shot = await save_image(tmp_path, "screenshot", shot_bytes, "image/png")
            # An MCP server answers with a few images again and again: each is stored once and refreshed.
            mcp_bytes = f"mcp {number}/{rng.randrange(10)}".encode()
            mcp = await save_image(tmp_path, "mcp_image", mcp_bytes, "image/jpeg")
            doc = await save_json(tmp_path, "elements", {"session": number, "capture": i})
            # Just written, so among the newest: no concurrent prune may have taken it (KEEP > writers).
            assert (shot.read_bytes(), mcp.read_bytes()) == (shot_bytes, mcp_bytes)
            kinds: tuple[tuple[CacheKind, Path], ...] = (("screenshot", shot), ("mcp_image", mcp), ("elements", doc))
            for kind, path in kinds:
                dated[kind][path] = (path.stat().st_mtime_ns, path.name)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for number in range(SESSIONS):
                group.start_soon(session, number)
    return dated


def _kept(tmp_path: Path) -> dict[CacheKind, set[Path]]:
    images, documents = tmp_path / "images", tmp_path / "computer_use"
    return {
        "screenshot": files(images, "computer_use_"),
        "mcp_image": files(images, "mcp-"),
        "elements": files(documents, "elements_"),
    }


async def test_concurrent_writers_of_every_kind_lose_nothing_the_rule_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every write gets the lock here, however long a loaded machine stalls a writer: this is the rule itself.
    monkeypatch.setattr(image_cache, "LOCK_WAIT_S", 60.0)
    foreign = tmp_path / "images" / "someone-elses.png"
    foreign.parent.mkdir(parents=True)
    foreign.write_bytes(b"not ours")
    dated = await _write_concurrently(tmp_path)
    kept = _kept(tmp_path)
    for kind, dates in dated.items():
        newest = set(sorted(dates, key=dates.__getitem__)[-KEEP:])
        assert len(dates) > KEEP, kind
        assert kept[kind] == newest, f"{kind}: exactly the newest {KEEP}, by date then name"
    assert foreign.read_bytes() == b"not ours", "a file the agent did not write is never touched"
    assert all(p.read_bytes().startswith(b"shot ") for p in kept["screenshot"]), "kept files are whole"


async def test_writers_that_never_wait_for_the_lock_still_lose_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if the machine stalled every writer past the wait: each contended write goes ahead without the lock and
    # skips its prune. A repeated image was refreshed in place then, and a prune that had listed it before the
    # refresh took the name the write returned (FileNotFoundError in the writer that got it back).
    monkeypatch.setattr(image_cache, "LOCK_WAIT_S", 0.0)
    dated = await _write_concurrently(tmp_path)
    kept = _kept(tmp_path)
    for kind, dates in dated.items():
        newest = set(sorted(dates, key=dates.__getitem__)[-KEEP:])
        assert newest <= kept[kind], f"{kind}: the newest {KEEP} are all there (skipped prunes may leave more)"


async def test_one_kind_never_prunes_another(tmp_path: Path) -> None:
    mcp = [await save_image(tmp_path, "mcp_image", f"m{i}".encode(), "image/png") for i in range(KEEP)]
    shots = [await save_image(tmp_path, "screenshot", f"s{i}".encode(), "image/png") for i in range(KEEP + 5)]
    assert all(p.exists() for p in mcp), "screenshots used to prune MCP's images in the shared folder"
    assert sum(p.exists() for p in shots) == KEEP and shots[-1].exists()


async def test_the_same_image_is_stored_once_and_written_whole(tmp_path: Path) -> None:
    first = await save_image(tmp_path, "mcp_image", b"same bytes", "image/webp")
    again = await save_image(tmp_path, "mcp_image", b"same bytes", "IMAGE/WEBP")
    odd = await save(tmp_path, "screenshot", b"raw", extension="bin")
    assert first == again and first.name.startswith("mcp-") and first.suffix == ".webp"
    assert first.read_bytes() == b"same bytes" and odd.read_bytes() == b"raw"
    assert not [p for p in (tmp_path / "images").iterdir() if p.name.endswith(".partial")]


async def test_a_folder_held_by_a_stuck_writer_still_takes_the_file_and_skips_the_prune(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl
    import os

    monkeypatch.setattr(image_cache, "LOCK_WAIT_S", 0.05)
    olds = [await save_image(tmp_path, "screenshot", f"s{i}".encode(), "image/png") for i in range(KEEP)]
    fd = os.open(tmp_path / "images" / ".lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another process froze while holding the lock
        with anyio.fail_after(10):
            late = await save_image(tmp_path, "screenshot", b"late", "image/png")
    finally:
        os.close(fd)
    assert late.read_bytes() == b"late" and all(p.exists() for p in olds), "written, nothing pruned"
    after = await save_image(tmp_path, "screenshot", b"after", "image/png")
    assert len(files(tmp_path / "images", "computer_use_")) == KEEP and after.exists()
