"""The one image cache: screenshots, MCP images and element documents under one pruning rule, written and pruned
concurrently by several sessions, with nothing the rule keeps ever lost, no writer deleting another's files, and no
file just written pruned however many others are written after it (the grace)."""

from __future__ import annotations

import os
import random
import stat
from pathlib import Path

import anyio
import pytest

from hermes_acp.images.cache import KEEP, CacheKind, save, save_image, save_json
from tests.fakes.cache_age import age_past_the_grace

pytestmark = pytest.mark.anyio

ROUNDS = 30
SESSIONS = 3
FOREVER_S = 3600.0
"""A grace longer than any test: nothing written during it is pruned."""


def files(folder: Path, prefix: str) -> set[Path]:
    return {p for p in folder.iterdir() if p.name.startswith(prefix)}


Dated = dict[CacheKind, dict[Path, tuple[int, str]]]


async def _write_concurrently(tmp_path: Path, grace_s: float, lock_wait_s: float) -> tuple[Dated, list[Path]]:
    """``SESSIONS`` writers of every kind at once, each waiting at most ``lock_wait_s`` for the folder's lock; each
    file's date and name the moment its write returned, and the files that were gone when their writer read them
    right after."""
    dated: Dated = {"screenshot": {}, "mcp_image": {}, "elements": {}}
    gone: list[Path] = []
    wait = lock_wait_s

    async def session(number: int) -> None:
        rng = random.Random(number)
        for i in range(ROUNDS):
            shot_bytes = f"shot {number}/{i}".encode()
            shot = await save_image(tmp_path, "screenshot", shot_bytes, "image/png", grace_s=grace_s, lock_wait_s=wait)
            # An MCP server answers with a few images again and again: each is stored once and refreshed.
            mcp_bytes = f"mcp {number}/{rng.randrange(10)}".encode()
            mcp = await save_image(tmp_path, "mcp_image", mcp_bytes, "image/jpeg", grace_s=grace_s, lock_wait_s=wait)
            doc = await save_json(
                tmp_path, "elements", {"session": number, "capture": i}, grace_s=grace_s, lock_wait_s=wait
            )
            kinds: tuple[tuple[CacheKind, Path], ...] = (("screenshot", shot), ("mcp_image", mcp), ("elements", doc))
            for kind, path in kinds:
                try:
                    dated[kind][path] = (path.stat().st_mtime_ns, path.name)
                except FileNotFoundError:
                    gone.append(path)
            assert shot in gone or shot.read_bytes() == shot_bytes, "written whole"

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for number in range(SESSIONS):
                group.start_soon(session, number)
    return dated, gone


def _kept(tmp_path: Path) -> dict[CacheKind, set[Path]]:
    images, documents = tmp_path / "images", tmp_path / "computer_use"
    return {
        "screenshot": files(images, "computer_use_"),
        "mcp_image": files(images, "mcp-"),
        "elements": files(documents, "elements_"),
    }


def _newest(dates: dict[Path, tuple[int, str]], count: int) -> set[Path]:
    return set(sorted(dates, key=dates.__getitem__)[-count:])


async def test_concurrent_writers_of_every_kind_lose_nothing_the_rule_keeps(tmp_path: Path) -> None:
    foreign = tmp_path / "images" / "someone-elses.png"
    foreign.parent.mkdir(parents=True)
    foreign.write_bytes(b"not ours")
    # Every write gets the lock here, however long a loaded machine stalls a writer: this is the rule itself.
    dated, _ = await _write_concurrently(tmp_path, grace_s=0.0, lock_wait_s=60.0)
    kept = _kept(tmp_path)
    for kind, dates in dated.items():
        assert len(dates) > KEEP, kind
        assert kept[kind] == _newest(dates, KEEP), f"{kind}: exactly the newest {KEEP}, by date then name"
    assert foreign.read_bytes() == b"not ours", "a file the agent did not write is never touched"
    assert all(p.read_bytes().startswith(b"shot ") for p in kept["screenshot"]), "kept files are whole"


async def test_a_file_just_written_is_never_pruned_however_many_follow_it(tmp_path: Path) -> None:
    """The race the suite used to lose on a busy machine: a writer stalled while the others wrote more than ``KEEP``
    files, and the screenshot it had just been handed was gone when it read it. Within the grace nothing goes; once
    the files are older than it, the rule takes the oldest (a clock set back makes files look young, not old)."""
    first = await save_image(tmp_path, "screenshot", b"handed to the model", "image/png", grace_s=FOREVER_S)
    dated, gone = await _write_concurrently(tmp_path, grace_s=FOREVER_S, lock_wait_s=60.0)
    assert gone == [] and first.read_bytes() == b"handed to the model"
    kept = _kept(tmp_path)
    for kind, dates in dated.items():
        assert kept[kind] == set(dates) | ({first} if kind == "screenshot" else set()), f"{kind}: all young, all kept"
    for folder in (tmp_path / "images", tmp_path / "computer_use"):
        age_past_the_grace(folder, by_s=2 * FOREVER_S)
    last = await save_image(tmp_path, "screenshot", b"now", "image/png", grace_s=FOREVER_S)
    after = _kept(tmp_path)["screenshot"]
    older = {p: (p.stat().st_mtime_ns, p.name) for p in kept["screenshot"] if p in after}
    assert last in after and len(after) == KEEP and not first.exists()
    assert set(older) == _newest({p: dated["screenshot"][p] for p in dated["screenshot"]}, KEEP - 1)


async def test_files_and_folders_are_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o000)
    try:
        shot = await save_image(tmp_path / "cache", "screenshot", b"private", "image/png")
        doc = await save_json(tmp_path / "cache", "elements", {"a": 1})
    finally:
        os.umask(old)
    modes = [stat.S_IMODE(p.stat().st_mode) for p in (shot, doc, shot.parent, doc.parent, tmp_path / "cache")]
    assert modes == [0o600, 0o600, 0o700, 0o700, 0o700]


async def test_a_cache_folder_that_is_a_link_is_not_written_through(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "images").symlink_to(elsewhere)
    with pytest.raises(OSError, match="is a link"):
        await save_image(tmp_path / "cache", "screenshot", b"x", "image/png")
    assert list(elsewhere.iterdir()) == []


async def test_writers_that_never_wait_for_the_lock_still_lose_nothing(tmp_path: Path) -> None:
    # As if the machine stalled every writer past the wait: each contended write goes ahead without the lock and
    # skips its prune. A repeated image was refreshed in place then, and a prune that had listed it before the
    # refresh took the name the write returned (FileNotFoundError in the writer that got it back).
    dated, _ = await _write_concurrently(tmp_path, grace_s=0.0, lock_wait_s=0.0)
    kept = _kept(tmp_path)
    for kind, dates in dated.items():
        newest = _newest(dates, KEEP)
        assert newest <= kept[kind], f"{kind}: the newest {KEEP} are all there (skipped prunes may leave more)"


async def test_one_kind_never_prunes_another(tmp_path: Path) -> None:
    mcp = [await save_image(tmp_path, "mcp_image", f"m{i}".encode(), "image/png", grace_s=0) for i in range(KEEP)]
    shots = [
        await save_image(tmp_path, "screenshot", f"s{i}".encode(), "image/png", grace_s=0) for i in range(KEEP + 5)
    ]
    assert all(p.exists() for p in mcp), "screenshots used to prune MCP's images in the shared folder"
    assert sum(p.exists() for p in shots) == KEEP and shots[-1].exists()


async def test_the_same_image_is_stored_once_and_written_whole(tmp_path: Path) -> None:
    first = await save_image(tmp_path, "mcp_image", b"same bytes", "image/webp")
    again = await save_image(tmp_path, "mcp_image", b"same bytes", "IMAGE/WEBP")
    odd = await save(tmp_path, "screenshot", b"raw", extension="bin")
    assert first == again and first.name.startswith("mcp-") and first.suffix == ".webp"
    assert first.read_bytes() == b"same bytes" and odd.read_bytes() == b"raw"
    assert not [p for p in (tmp_path / "images").iterdir() if p.name.endswith(".partial")]


async def test_a_folder_held_by_a_stuck_writer_still_takes_the_file_and_skips_the_prune(tmp_path: Path) -> None:
    import fcntl
    import os

    olds = [await save_image(tmp_path, "screenshot", f"s{i}".encode(), "image/png") for i in range(KEEP)]
    fd = os.open(tmp_path / "images" / ".lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another process froze while holding the lock
        with anyio.fail_after(10):
            late = await save_image(tmp_path, "screenshot", b"late", "image/png", lock_wait_s=0.05)
    finally:
        os.close(fd)
    assert late.read_bytes() == b"late" and all(p.exists() for p in olds), "written, nothing pruned"
    after = await save_image(tmp_path, "screenshot", b"after", "image/png", grace_s=0)
    assert len(files(tmp_path / "images", "computer_use_")) == KEEP and after.exists()
