"""The front door trusts only its own host, through the real process: before it sends a byte (its hello carries the
editor's environment, keys included) the socket's folder must be the user's own real ``0700`` directory and the
process listening must be the user's. A second user's socket planted at the predictable path, a folder that is a
link, and a folder of mode ``0755`` all get nothing; the front door exits non-zero and says which folder and why,
on stderr and as the answer to the editor's ``initialize``.

The second user is real: created with ``useradd`` for the test (root only; CI runs as root) and removed after it.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from hermes_acp.transports.paths import host_paths
from tests.fakes.host_process import SharedHome, shared_home

pytestmark = pytest.mark.anyio

WAIT_S = 60.0
SECRET = "sk-test-secret-the-planted-socket-must-never-see"


@dataclass(frozen=True)
class Stranger:
    name: str
    uid: int
    gid: int


@pytest.fixture
def stranger() -> Iterator[Stranger]:
    """A second local user, created for the test and removed after it."""
    if os.getuid() != 0:
        pytest.skip(
            "needs root: the test creates a second local user (useradd) whose socket the front door must refuse"
        )
    useradd, userdel = shutil.which("useradd"), shutil.which("userdel")
    if useradd is None or userdel is None:
        pytest.skip("needs useradd and userdel to create a second local user")
    name = f"hacp{secrets.token_hex(4)}"
    subprocess.run(
        [useradd, "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
        timeout=30,
    )
    try:
        entry = pwd.getpwnam(name)
        yield Stranger(name, entry.pw_uid, entry.pw_gid)
    finally:
        subprocess.run([userdel, name], check=False, capture_output=True, timeout=30)


class Listener:
    """A socket listening where the front door connects; ``received()`` (once the front door has exited) drains every
    connection it was offered and says how many bytes came, without waiting: a dead peer's bytes are all queued."""

    def __init__(self, path: str):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)

    def received(self) -> int:
        return _drain(self.sock)

    def close(self) -> None:
        self.sock.close()


def _drain(listener: socket.socket) -> int:
    listener.setblocking(False)
    total = 0
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return total
        with conn:
            conn.settimeout(10)
            while chunk := conn.recv(65536):
                total += len(chunk)


class PlantedListener:
    """A listener run by ``stranger`` (a forked child that becomes that user): it makes the socket's folder (loose,
    its own) and listens on the socket path, then, told the front door is gone, reports the bytes it was sent."""

    def __init__(self, stranger: Stranger, socket_path: str):
        self._ready_r, ready_w = os.pipe()
        go_r, self._go_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the stranger: only system calls from here, then _exit
            report = b"?"
            try:
                os.close(self._ready_r)
                os.close(self._go_w)
                os.setgroups([])
                os.setgid(stranger.gid)
                os.setuid(stranger.uid)
                folder = os.path.dirname(socket_path)
                os.makedirs(folder, exist_ok=True)
                for path in (os.path.dirname(folder), folder):
                    os.chmod(path, 0o777)
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.bind(socket_path)
                os.chmod(socket_path, 0o777)
                sock.listen(8)
                os.write(ready_w, b"ready")
                os.read(go_r, 1)
                report = str(_drain(sock)).encode()
            except BaseException as exc:
                report = f"error {exc!r}".encode()
            finally:
                with contextlib.suppress(OSError):
                    os.write(ready_w, report)
                os._exit(0)
        os.close(ready_w)
        os.close(go_r)

    async def ready(self) -> None:
        with anyio.fail_after(WAIT_S):
            said = await anyio.to_thread.run_sync(os.read, self._ready_r, 256)
        assert said == b"ready", said

    async def received(self) -> int:
        os.write(self._go_w, b"g")
        with anyio.fail_after(WAIT_S):
            said = await anyio.to_thread.run_sync(os.read, self._ready_r, 256)
            await anyio.to_thread.run_sync(os.waitpid, self.pid, 0)
        os.close(self._ready_r)
        os.close(self._go_w)
        assert said.isdigit(), said
        return int(said)


async def _front_door(shared: SharedHome) -> tuple[int, dict[str, Any] | None, str]:
    """``hermes-acp --shared`` with an editor's ``initialize`` on stdin: its exit status, its answer, its stderr."""
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    with anyio.fail_after(WAIT_S):
        done = await anyio.run_process(
            [sys.executable, "-m", "hermes_acp", "--shared"],
            input=json.dumps(initialize).encode() + b"\n",
            env={**shared.env, "OPENAI_API_KEY": SECRET},
            check=False,
        )
    text = done.stdout.decode().strip()
    return done.returncode, (json.loads(text) if text else None), done.stderr.decode()


def _refused(code: int, answer: dict[str, Any] | None, stderr: str, *words: str) -> None:
    """Exit 1, and the editor's ``initialize`` answered with an error that says each of ``words``."""
    assert code == 1, stderr
    assert answer is not None and answer["id"] == 0 and "result" not in answer, answer
    for word in words:
        assert word in answer["error"]["message"], (word, answer)
        assert word in stderr, (word, stderr)


async def test_a_second_user_s_socket_planted_at_the_path_receives_nothing(tmp_path: Path, stranger: Stranger) -> None:
    async with shared_home(tmp_path) as shared:
        os.chmod(shared.runtime, 0o777)  # XDG_RUNTIME_DIR in a folder anyone can write
        paths = host_paths(shared.env)
        planted = PlantedListener(stranger, paths.socket)
        await planted.ready()
        code, answer, stderr = await _front_door(shared)
        received = await planted.received()
    assert received == 0, "the planted socket was sent the hello (the editor's environment)"
    _refused(code, answer, stderr, paths.directory, "belongs to another user", f"uid {stranger.uid}")


async def test_a_second_user_listening_in_a_folder_that_looks_right_is_refused_by_its_uid(
    tmp_path: Path, stranger: Stranger
) -> None:
    """Only the peer's uid stands here: the folder is made the user's own ``0700`` after the stranger listened."""
    async with shared_home(tmp_path) as shared:
        os.chmod(shared.runtime, 0o777)
        paths = host_paths(shared.env)
        planted = PlantedListener(stranger, paths.socket)
        await planted.ready()
        os.chown(paths.directory, os.getuid(), os.getgid())
        os.chmod(paths.directory, 0o700)
        code, answer, stderr = await _front_door(shared)
        received = await planted.received()
    assert received == 0, "the stranger's socket was sent the hello"
    _refused(code, answer, stderr, paths.socket, "belongs to another user", f"uid {stranger.uid}")


async def test_a_socket_folder_that_is_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    async with shared_home(tmp_path) as shared:
        paths = host_paths(shared.env)
        elsewhere = shared.runtime / "elsewhere"
        elsewhere.mkdir(mode=0o700)
        Path(paths.directory).parent.mkdir(mode=0o700, parents=True)
        os.symlink(elsewhere, paths.directory)
        listener = Listener(str(elsewhere / "host.sock"))
        try:
            code, answer, stderr = await _front_door(shared)
            received = listener.received()
        finally:
            listener.close()
    assert received == 0, "the socket behind the link was sent the hello"
    _refused(code, answer, stderr, paths.directory, "symbolic link")


async def test_a_socket_folder_others_may_enter_is_refused(tmp_path: Path) -> None:
    async with shared_home(tmp_path) as shared:
        paths = host_paths(shared.env)
        os.makedirs(paths.directory, mode=0o700)
        os.chmod(paths.directory, 0o755)
        listener = Listener(paths.socket)
        try:
            code, answer, stderr = await _front_door(shared)
            received = listener.received()
        finally:
            listener.close()
    assert received == 0, "the socket in an open folder was sent the hello"
    _refused(code, answer, stderr, paths.directory, "0755", "chmod 700")


async def test_a_refused_folder_with_no_socket_in_it_starts_no_host(tmp_path: Path) -> None:
    """Nothing listens yet: the front door refuses the folder rather than start a host that would use it."""
    async with shared_home(tmp_path) as shared:
        paths = host_paths(shared.env)
        os.makedirs(paths.directory, mode=0o700)
        os.chmod(paths.directory, 0o750)
        code, answer, stderr = await _front_door(shared)
        assert not os.path.exists(paths.socket), "no host was started in the refused folder"
        assert shared.record() is None
    _refused(code, answer, stderr, paths.directory, "0750")
