"""The anchored file operations (invariant 21, docs/architecture.md §4.17): a link anywhere on the way, a component
whose kind changed and a dangling link are refused and nothing outside changes; a folder swapped for a link while
it is held cannot redirect a write (every step is relative to the descriptor already open); new files and folders
get exactly their mode whatever the umask; a replaced file leaves no temporary file behind and keeps its mode."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path, PurePath

import pytest

from hermes_acp import anchored
from hermes_acp.anchored import Refused, anchor_for, folder, make_folders, remove_file, tighten, write_file


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A folder the caller owns (``anchor``) and one outside it with a precious file."""
    anchor = tmp_path / "owned"
    outside = tmp_path / "outside"
    anchor.mkdir()
    outside.mkdir()
    (outside / "f").write_bytes(b"precious")
    return anchor, outside


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_link_in_the_middle_is_refused_and_nothing_outside_changes(tree: tuple[Path, Path]) -> None:
    anchor, outside = tree
    (anchor / "d").symlink_to(outside)
    with pytest.raises(Refused) as refused:
        write_file(anchor, anchor / "d" / "f", b"payload")
    assert refused.value.component == anchor / "d" and "link" in str(refused.value)
    with pytest.raises(Refused):
        remove_file(anchor, anchor / "d" / "f")
    with pytest.raises(Refused):
        make_folders(anchor, anchor / "d" / "sub")
    assert (outside / "f").read_bytes() == b"precious" and sorted(os.listdir(outside)) == ["f"]


def test_a_link_as_the_file_itself_is_neither_written_through_nor_removed(tree: tuple[Path, Path]) -> None:
    anchor, outside = tree
    (anchor / "f").symlink_to(outside / "f")
    with pytest.raises(Refused, match="is a link"):
        write_file(anchor, anchor / "f", b"payload")
    with pytest.raises(Refused, match="is a link"):
        remove_file(anchor, anchor / "f")
    assert os.path.islink(anchor / "f") and (outside / "f").read_bytes() == b"precious"


def test_open_read_refuses_a_link(tree: tuple[Path, Path]) -> None:
    anchor, outside = tree
    (anchor / "f").symlink_to(outside / "f")
    with pytest.raises(Refused):
        anchored.open_read(anchor, anchor / "f")
    assert anchored.open_read(anchor, anchor / "g") is None, "absent"
    (anchor / "g").write_bytes(b"ours")
    opened = anchored.open_read(anchor, anchor / "g")
    assert opened is not None
    with opened:
        assert opened.read() == b"ours"


def test_a_component_whose_kind_changed_is_refused(tree: tuple[Path, Path]) -> None:
    anchor, _ = tree
    (anchor / "d").write_bytes(b"a file where a folder was")
    with pytest.raises(Refused, match="no longer a folder"):
        write_file(anchor, anchor / "d" / "f", b"x", folders=0o700)
    (anchor / "e").mkdir()
    with pytest.raises(Refused, match="no longer a regular file"):
        write_file(anchor, anchor / "e", b"a folder where a file was")
    with pytest.raises(Refused, match="no longer a file"):
        remove_file(anchor, anchor / "e")
    assert (anchor / "e").is_dir() and (anchor / "d").read_bytes() == b"a file where a folder was"


def test_a_dangling_link_is_not_followed_to_create_what_it_names(tree: tuple[Path, Path]) -> None:
    anchor, outside = tree
    (anchor / "d").symlink_to(outside / "not-yet")
    with pytest.raises(Refused):
        write_file(anchor, anchor / "d" / "f", b"x", folders=0o700)
    (anchor / "g").symlink_to(outside / "g")
    with pytest.raises(Refused):
        write_file(anchor, anchor / "g", b"x")
    assert sorted(os.listdir(outside)) == ["f"], "neither the folder nor the file the links name was created"


@pytest.mark.skipif(not anchored.DIR_FD, reason="the guarantee of directory descriptors")
def test_a_folder_swapped_for_a_link_while_held_cannot_redirect_the_write(tree: tuple[Path, Path]) -> None:
    """Check-then-write has no window: the write happens in the folder the walk reached, wherever it now is."""
    anchor, outside = tree
    (anchor / "d").mkdir()
    with folder(anchor, anchor / "d") as held:
        (anchor / "d").rename(anchor / "moved")
        (anchor / "d").symlink_to(outside)
        fd = held.open("f", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        os.write(fd, b"landed in the folder that was checked")
        os.close(fd)
    assert (outside / "f").read_bytes() == b"precious"
    assert (anchor / "moved" / "f").read_bytes() == b"landed in the folder that was checked"
    with pytest.raises(Refused):
        write_file(anchor, anchor / "d" / "f", b"payload")
    assert (outside / "f").read_bytes() == b"precious"


def test_new_files_and_folders_get_their_mode_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o000)
    try:
        write_file(tmp_path / "home", tmp_path / "home" / "cache" / "images" / "a.png", b"x", folders=0o700)
        fd = anchored.open_fd(
            tmp_path / "home", tmp_path / "home" / "logs" / "a.log", os.O_WRONLY | os.O_CREAT, folders=0o700
        )
        os.close(fd)
    finally:
        os.umask(old)
    home = tmp_path / "home"
    assert [_mode(p) for p in (home, home / "cache", home / "cache" / "images", home / "logs")] == [0o700] * 4
    assert _mode(home / "cache" / "images" / "a.png") == _mode(home / "logs" / "a.log") == 0o600


def test_a_replaced_file_keeps_its_mode_and_leaves_no_temporary_file(tmp_path: Path, umask_022: None) -> None:
    target = tmp_path / "config.toml"
    write_file(tmp_path, target, b"one")
    assert _mode(target) == 0o600
    write_file(tmp_path, target, b"two")
    assert target.read_bytes() == b"two" and _mode(target) == 0o600
    target.chmod(0o640)
    write_file(tmp_path, target, b"three")
    assert _mode(target) == 0o640, "an existing file keeps its mode"
    write_file(tmp_path, target, b"four", keep_mode=False)
    assert _mode(target) == 0o600
    (tmp_path / "d").mkdir()
    with pytest.raises(Refused):
        write_file(tmp_path, tmp_path / "d", b"into a folder")
    assert sorted(os.listdir(tmp_path)) == ["config.toml", "d"], "no temporary file left, even after a refusal"


def test_a_write_that_fails_half_way_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    """A process that may not write files over 4 bytes (``ulimit -f``): the write fails after its first bytes."""
    target = tmp_path / "notes.md"
    target.write_bytes(b"old")
    script = (
        "import resource, signal, sys\n"
        "from pathlib import Path\n"
        "from hermes_acp.anchored import write_file\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4, 4))\n"
        "folder = Path(sys.argv[1])\n"
        "try:\n"
        "    write_file(folder, folder / 'notes.md', b'much longer than four bytes')\n"
        "except OSError as exc:\n"
        "    print(exc.errno)\n"
    )
    command = [sys.executable, "-c", script, str(tmp_path)]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == str(errno.EFBIG), done.stderr
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["notes.md"]


def test_remove_file_removes_only_a_regular_file(tree: tuple[Path, Path]) -> None:
    anchor, _ = tree
    (anchor / "f").write_bytes(b"x")
    assert remove_file(anchor, anchor / "f") is True
    assert remove_file(anchor, anchor / "f") is False
    assert remove_file(anchor, anchor / "missing" / "f") is False


def test_tighten_takes_group_and_other_bits_and_never_follows_a_link(tree: tuple[Path, Path], umask_022: None) -> None:
    anchor, outside = tree
    (anchor / "state.db").write_bytes(b"")
    (anchor / "state.db").chmod(0o644)
    (anchor / "logs").mkdir(mode=0o755)
    (anchor / "run.sh").write_bytes(b"")
    (anchor / "run.sh").chmod(0o755)
    (outside / "f").chmod(0o644)
    (anchor / "link").symlink_to(outside / "f")
    anchor.chmod(0o755)
    paths = [PurePath(anchor / name) for name in ("state.db", "logs", "run.sh", "link", "missing")]
    assert anchored.entries(anchor, anchor) == sorted(p for p in paths if p.name != "missing")
    changed = tighten(anchor, [PurePath(anchor), *paths])
    assert changed == [
        (anchor, 0o755),
        (anchor / "state.db", 0o644),
        (anchor / "logs", 0o755),
        (anchor / "run.sh", 0o755),
    ]
    assert [_mode(anchor / n) for n in ("state.db", "logs", "run.sh")] == [0o600, 0o700, 0o700]
    assert _mode(anchor) == 0o700 and _mode(outside / "f") == 0o644, "the link's target is not touched"
    assert tighten(anchor, [PurePath(anchor), *paths]) == [], "nothing more to do"


def test_the_anchor_is_the_deepest_owned_folder_holding_the_path() -> None:
    roots = [PurePath("/w"), PurePath("/w/sub"), PurePath("/x")]
    assert anchor_for(PurePath("/w/sub/a/b"), roots) == PurePath("/w/sub")
    assert anchor_for(PurePath("/w/a"), roots) == PurePath("/w")
    assert anchor_for(PurePath("/wx/a"), roots) == PurePath("/"), "compared by component, not by prefix"
    with pytest.raises(ValueError, match="goes only down"):
        write_file(Path("/w"), Path("/w/../etc/passwd"), b"")


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names descriptors through /proc")
def test_a_durable_write_syncs_the_file_before_the_rename_and_the_folder_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps: list[str] = []
    real_fsync, real_rename = os.fsync, os.rename

    def fsync(fd: int) -> None:
        steps.append("fsync " + Path(os.readlink(f"/proc/self/fd/{fd}")).name)
        real_fsync(fd)

    def rename(source: str, target: str, **kwargs: int) -> None:
        steps.append(f"rename {'temporary' if source.endswith('.tmp') else source} -> {target}")
        real_rename(source, target, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "rename", rename)
    write_file(tmp_path, tmp_path / "config.toml", b"[model]\n")
    write_file(tmp_path, tmp_path / "cache.png", b"x", durable=False)
    temporary = steps[0].removeprefix("fsync ")
    assert temporary.startswith(".config.toml.") and temporary.endswith(".tmp")
    assert steps == [
        f"fsync {temporary}",
        "rename temporary -> config.toml",
        f"fsync {tmp_path.name}",
        "rename temporary -> cache.png",
    ]
