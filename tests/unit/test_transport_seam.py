"""The transports' decisions that differ by system, taken on Linux with the other system's values: the macOS peer
credentials (a recorded ``xucred``) through the host's and the front door's trust checks, socket paths within
macOS's 103 bytes (a short folder, and a note saying where), and shared mode refused on Windows only."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from hermes_acp.platform import peers, system
from hermes_acp.transports.paths import host_paths, peer_problem, private_dir, untrusted_host
from hermes_acp.transports.unix import UnixDoor
from tests.unit.test_platform import XUCRED_3

ME = os.getuid()


class RecordedPeer:
    """A connected socket as macOS answers ``getsockopt(SOL_LOCAL, LOCAL_PEERCRED)``: the recorded bytes."""

    def __init__(self, answer: bytes):
        self.answer = answer
        self.asked: list[tuple[int, int, int]] = []

    def getsockopt(self, level: int, optname: int, buflen: int, /) -> bytes:
        self.asked.append((level, optname, buflen))
        return self.answer[:buflen]


def _xucred_of(uid: int) -> bytes:
    """XUCRED_3 with ``uid`` in ``cr_uid`` (bytes 4..8): the same groups, another user."""
    return XUCRED_3[:4] + uid.to_bytes(4, "little") + XUCRED_3[8:]


async def _nothing(*_args: Any) -> Any:
    raise AssertionError("not reached: a refused connection is never served")


def test_the_macos_peer_of_another_user_is_refused_by_the_host_and_by_the_front_door(tmp_path: Path) -> None:
    stranger = RecordedPeer(XUCRED_3)  # uid 501
    door = UnixDoor(_nothing, _nothing, str(tmp_path), read_peer=peers.xucred_peer_uid)
    assert door.refusal(stranger) == f"the connecting process belongs to another user (uid 501, you are uid {ME})"
    assert stranger.asked == [(0, 1, 76)], "SOL_LOCAL, LOCAL_PEERCRED, sizeof(struct xucred)"
    env = {"HERMES_ACP_HOME": str(tmp_path / "home"), "XDG_RUNTIME_DIR": str(tmp_path)}
    paths = host_paths(env)
    private_dir(paths.directory)
    found = untrusted_host(paths, RecordedPeer(XUCRED_3), peers.xucred_peer_uid)
    assert found == f"the process listening on {paths.socket} belongs to another user (uid 501, you are uid {ME})"


def test_the_macos_peer_of_this_user_is_let_in_and_an_unreadable_one_is_not(tmp_path: Path) -> None:
    door = UnixDoor(_nothing, _nothing, str(tmp_path), read_peer=peers.xucred_peer_uid)
    assert door.refusal(RecordedPeer(_xucred_of(ME))) is None
    assert peer_problem(RecordedPeer(_xucred_of(ME)), "the host", peers.xucred_peer_uid) is None
    short = door.refusal(RecordedPeer(XUCRED_3[:40]))
    assert short == "the connecting process: its credentials could not be read (short xucred: 40 bytes, 76 expected)"
    other_version = peer_problem(RecordedPeer(b"\x01" + XUCRED_3[1:]), "the host", peers.xucred_peer_uid)
    assert other_version == "the host: its credentials could not be read (unexpected xucred (version 1, 3 groups))"
    assert door.refusal(None) == "a connection without a socket"
    windows = peer_problem(RecordedPeer(XUCRED_3), "the host", peers.no_peer_uid)
    assert windows == "the host: this system cannot tell which user it is"


def _runtime_of_length(socket_bytes: int) -> Path:
    """A runtime folder whose host socket path (``<it>/hermes-acp/<16 hex>/host.sock``) is ``socket_bytes`` long
    (nothing is created: only the paths are worked out)."""
    fixed = len(os.fsencode(os.path.join("/r", "hermes-acp", "0" * 16, "host.sock"))) - 1
    return Path("/" + "r" * (socket_bytes - fixed))


def test_a_socket_path_too_long_for_macos_moves_to_a_short_folder_and_says_where(tmp_path: Path) -> None:
    runtime = _runtime_of_length(105)
    env = {"HERMES_ACP_HOME": str(tmp_path / "home"), "XDG_RUNTIME_DIR": str(runtime)}
    linux = host_paths(env, max_socket_bytes=system.max_socket_path_bytes("linux"))
    assert len(os.fsencode(linux.socket)) == 105
    assert linux.directory.startswith(str(runtime)) and linux.note is None
    macos = host_paths(env, max_socket_bytes=system.max_socket_path_bytes("darwin"))
    digest = hashlib.sha256(str(tmp_path / "home").encode()).hexdigest()[:16]
    assert macos.directory == f"/tmp/hermes-acp-{digest}"
    assert macos.socket == f"/tmp/hermes-acp-{digest}/host.sock"
    assert macos.note == (
        f"the session host's socket is in /tmp/hermes-acp-{digest}: in {runtime}/hermes-acp/{digest} its path would"
        " be 105 bytes, longer than a Unix socket allows here (103)"
    )
    in_tmpdir = host_paths({**env, "TMPDIR": "/var/tmp"}, max_socket_bytes=103)
    assert in_tmpdir.directory == f"/var/tmp/hermes-acp-{digest}"
    assert host_paths(env, max_socket_bytes=103).socket == macos.socket, "every process finds the same folder"


def test_the_home_s_run_folder_moves_too_and_nothing_short_enough_is_an_error(tmp_path: Path) -> None:
    home = tmp_path / ("h" * 100)
    moved = host_paths({"HERMES_ACP_HOME": str(home)})
    assert moved.directory.startswith("/tmp/hermes-acp-")
    assert moved.note is not None and f"in {home}/run its path would be" in moved.note
    with pytest.raises(OSError, match="set XDG_RUNTIME_DIR to a short directory"):
        host_paths({"HERMES_ACP_HOME": str(home)}, max_socket_bytes=30)


def test_shared_mode_is_refused_on_windows_only() -> None:
    assert system.shared_mode_problem("win32") == "shared mode needs macOS or Linux for now"
    assert system.shared_mode_problem("darwin") is None
    assert system.shared_mode_problem("linux") is None
    assert system.shared_mode_problem("wsl") is None
    assert (system.max_socket_path_bytes("darwin"), system.max_socket_path_bytes("linux")) == (103, 107)
