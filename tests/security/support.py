"""What the security tests share: a sandbox that must work (or the lane fails under ``HERMES_REQUIRE_LANES=1``), a
folder outside ``/tmp`` for test trees (commands get a private ``/tmp``, which would hide a tree there whatever the
sandbox's own rules say), a shell shim that records every command it is asked to run, and a listener on 127.0.0.1
for network checks."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

from hermes_acp.exec.sandbox import probe
from tests.fakes.lanes import lane_missing

__all__ = ["ShellShim", "listener", "outside_tmp", "require_bwrap", "shell_shim"]


def require_bwrap() -> str:
    """The bwrap path; skips (fails under ``HERMES_REQUIRE_LANES=1``) where bubblewrap cannot build a sandbox."""
    availability = probe()
    if not availability.usable or availability.bwrap is None:
        lane_missing(f"the sandbox lane needs bubblewrap: {availability.problem} (bash .ci/run installs it)")
    return availability.bwrap


@contextlib.contextmanager
def outside_tmp() -> Iterator[Path]:
    """A fresh, empty folder that is not under ``/tmp`` or ``/var/tmp`` (in the user's own home, whatever ``$HOME``
    says, or beside the checkout), removed afterwards."""
    real_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    candidates = [real_home / ".cache" / "hermes-acp-test-trees", Path(__file__).resolve().parents[2] / "out" / "trees"]
    for base in candidates:
        if base.resolve().is_relative_to("/tmp") or base.resolve().is_relative_to("/var/tmp"):
            continue
        try:
            base.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        folder = base / uuid.uuid4().hex[:12]
        folder.mkdir()
        try:
            yield folder.resolve()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    raise RuntimeError(f"no writable folder outside /tmp for test trees (tried {candidates})")


class ShellShim:
    """A folder put first on PATH whose ``bash`` and ``sh`` append their arguments to ``log`` and then run the real
    shell: when ``log`` stays empty, no command reached a shell."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.log = folder / "shell-calls.log"

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def path(self, rest: str | None = None) -> str:
        return f"{self.folder}:{rest if rest is not None else os.environ.get('PATH', '')}"


def shell_shim(folder: Path) -> ShellShim:
    folder.mkdir(parents=True, exist_ok=True)
    shim = ShellShim(folder)
    for name in ("bash", "sh"):
        real = shutil.which(name, path="/usr/bin:/bin")
        assert real is not None, f"no {name} on this machine"
        script = folder / name
        script.write_text(f'#!{real}\nprintf "%s\\n" "$*" >> "{shim.log}"\nexec {real} "$@"\n')
        script.chmod(0o755)
    return shim


@contextlib.contextmanager
def listener() -> Iterator[int]:
    """A TCP listener on 127.0.0.1 (any free port) for the length of the block; yields its port."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]
    finally:
        server.close()
