"""Ways out of the sandbox a hostile command tries, and what it gets: the environment bwrap itself starts with, the
user's session sockets, the terminal the command was started from, and masks inside masks.

Real bubblewrap runs, as in ``test_sandbox``; folders that must lie outside the private ``/tmp`` are made in the
current directory and removed afterwards.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from hermes_acp.exec.environment import EnvPolicy
from hermes_acp.exec.sandbox import Sandbox
from hermes_acp.tools.terminal import TerminalTool
from tests.fakes.editor_client import EditorClient
from tests.tools.helpers import call, context
from tests.tools.test_terminal import ClientTerminals

from .support import require_bwrap

pytestmark = pytest.mark.anyio

PRELOADED = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void escape(void) {
    char exe[512] = {0};
    const char *marker = getenv("ESCAPE_MARKER");
    if (marker == NULL || readlink("/proc/self/exe", exe, sizeof exe - 1) < 0 || strstr(exe, "bwrap") == NULL) {
        return;
    }
    FILE *file = fopen(marker, "w");
    if (file != NULL) {
        fputs("written from bwrap's own process\n", file);
        fclose(file);
    }
}
"""


@pytest.fixture
def bwrap() -> str:
    return require_bwrap()


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    (tmp_path / "home").mkdir()
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A folder outside /tmp (which every sandboxed command sees empty), in the current directory."""
    with tempfile.TemporaryDirectory(prefix=".hermes-test-", dir=Path.cwd()) as folder:
        yield Path(folder)


def _sandbox(ws: Path, **overrides: object) -> Sandbox:
    fields: dict[str, object] = {"home": ws.parent / "agent-home", **overrides}
    return Sandbox(**fields)  # type: ignore[arg-type]


async def test_the_command_environment_never_reaches_bwrap_itself(bwrap: str, ws: Path) -> None:
    """bwrap runs outside the sandbox: its dynamic loader must not read variables the model chose."""
    ctx = context(ws, mode="dont_ask", sandbox=_sandbox(ws))
    called = await call(TerminalTool(), ctx, command='echo "[$LD_DEBUG]"', env={"LD_DEBUG": "files"})
    assert called.output["sandboxed"] is True
    assert "[files]" in called.text, "the command still gets its variables"
    assert f"needed by {bwrap}" not in called.text, "bwrap's own loader read LD_DEBUG"


async def test_nor_the_editor_terminal_that_starts_bwrap(bwrap: str, ws: Path) -> None:
    client = EditorClient()
    ctx = context(ws, mode="dont_ask", sandbox=_sandbox(ws), terminals=ClientTerminals(client))
    try:
        called = await call(TerminalTool(), ctx, command='echo "[$LD_DEBUG]"', env={"LD_DEBUG": "files"})
    finally:
        await client.aclose()
    assert "[files]" in called.text
    assert f"needed by {bwrap}" not in called.text


async def test_a_preloaded_library_runs_only_inside(bwrap: str, ws: Path) -> None:
    """The escape itself: a library the command wrote, preloaded into bwrap, would run with no sandbox at all."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("needs a C compiler to build the library a hostile command would build")
    (ws / "preload.c").write_text(PRELOADED)
    library = ws / "preload.so"
    with anyio.fail_after(60):
        await anyio.run_process([compiler, "-shared", "-fPIC", "-o", str(library), str(ws / "preload.c")])
    marker = ws.parent / "escaped.txt"
    ctx = context(ws, mode="dont_ask", sandbox=_sandbox(ws))
    env = {"LD_PRELOAD": str(library), "ESCAPE_MARKER": str(marker)}
    called = await call(TerminalTool(), ctx, command="echo ran", env=env)
    assert "ran" in called.text
    assert not marker.exists(), "code from the workspace ran in bwrap's process, outside the sandbox"


async def test_the_user_session_sockets_are_out_of_reach(
    bwrap: str, ws: Path, outside_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session's D-Bus bus (``systemd-run --user``), keyring, gpg-agent and podman listen in $XDG_RUNTIME_DIR;
    a socket connects through a read-only bind. An ssh-agent socket there stays reachable when it is passed."""
    runtime = outside_tmp / "run"
    runtime.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("SSH_AUTH_SOCK", str(runtime / "agent.sock"))
    servers = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(2)]
    try:
        for server, name in zip(servers, ("bus", "agent.sock"), strict=True):
            server.bind(str(runtime / name))
            server.listen(4)
        connect = (
            "python3 -c \"import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print('reached',"
            " sys.argv[1].rsplit('/')[-1])\" {} 2>&1 | tail -1"
        )
        command = "; ".join(connect.format(f'"{runtime}/{name}"') for name in ("bus", "agent.sock"))
        hidden = await call(TerminalTool(), context(ws, mode="dont_ask", sandbox=_sandbox(ws)), command=command)
        passed = _sandbox(ws, env_policy=EnvPolicy.of(["SSH_AUTH_SOCK"]))
        kept = await call(TerminalTool(), context(ws, mode="dont_ask", sandbox=passed), command=command)
    finally:
        for server in servers:
            server.close()
    assert "reached bus" not in hidden.text and "reached agent.sock" not in hidden.text, hidden.text
    assert "reached bus" not in kept.text, kept.text
    assert "reached agent.sock" in kept.text, "a passed ssh-agent socket stays reachable"


async def test_a_command_for_the_editor_terminal_has_no_controlling_terminal(bwrap: str, ws: Path) -> None:
    """The editor starts the line on a terminal: without a session of its own, a command can push keystrokes into
    that terminal (TIOCSTI), to be run there after it exits, outside the sandbox."""
    setsid = shutil.which("setsid")
    if setsid is None:
        pytest.skip("needs util-linux setsid to start a command on a terminal")
    probe = ["/bin/sh", "-c", "if (exec 3<>/dev/tty) 2>/dev/null; then echo has-a-terminal; else echo no-terminal; fi"]
    line = _sandbox(ws).contained(probe, roots=[ws], cwd=ws, mode="dont_ask", extra_env={}, for_editor=True)
    async with line as confined:
        assert confined.sandboxed
        control = await anyio.to_thread.run_sync(_on_a_terminal, [setsid, "--ctty", *probe], None)
        assert "has-a-terminal" in control, "the control: a command started this way has a terminal"
        sandboxed = await anyio.to_thread.run_sync(_on_a_terminal, [setsid, "--ctty", *confined.argv], confined.env)
    assert "no-terminal" in sandboxed, sandboxed


def _on_a_terminal(argv: list[str], env: dict[str, str] | None) -> str:
    """What ``argv`` prints when a new terminal is its controlling terminal (blocking, bounded)."""
    leader, follower = os.openpty()
    try:
        subprocess.run(argv, stdin=follower, stdout=follower, stderr=follower, env=env, timeout=20, check=False)
        ready, _, _ = select.select([leader], [], [], 5)
        return os.read(leader, 4096).decode() if ready else ""
    finally:
        os.close(follower)
        os.close(leader)


async def test_masks_inside_a_masked_folder_do_not_break_commands(bwrap: str, ws: Path) -> None:
    """A configured mask that holds other masked paths (the agent's home under ~/.config, a .env file in a masked
    project folder) hides them with it; bwrap cannot mount onto a folder once it is read-only."""
    home = Path(os.environ["HOME"])
    agent_home = home / ".config" / "hermes-acp"
    agent_home.mkdir(parents=True)
    (agent_home / "config.toml").write_text("[model]")
    (ws / "private").mkdir()
    (ws / "private" / ".env").write_text("TOKEN=abc")
    sandbox = Sandbox(home=agent_home, mask=("~/.config", "private"))
    ctx = context(ws, mode="dont_ask", sandbox=sandbox)
    called = await call(TerminalTool(), ctx, command=f"cat {agent_home}/config.toml private/.env 2>&1; echo ran")
    assert "\nran" in called.text and "bwrap" not in called.text, called.text
    assert "[model]" not in called.text and "abc" not in called.text


async def test_what_git_runs_stays_as_it_is(bwrap: str, ws: Path) -> None:
    """git runs what .git/config names (core.fsmonitor on every `git status`, which editors run in the background)
    and what .git/hooks holds, outside the sandbox; a command must not change either, nor swap .git for another,
    in the workspace's repository or one inside it. Commits still work."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("needs git")
    for repository in (ws, ws / "vendored"):
        repository.mkdir(exist_ok=True)
        with anyio.fail_after(30):
            await anyio.run_process([git, "init", "-q", str(repository)])
    attempts = [
        "git config core.fsmonitor 'touch ../ran-by-git'",
        "git -C vendored config core.pager 'touch ../../ran-by-git'",
        "printf '#!/bin/sh\\ntouch ../ran-by-git\\n' > .git/hooks/post-commit",
        "mv .git .git-moved",
        "rm -rf vendored/.git/hooks",
    ]
    command = "; ".join(f"{attempt} 2>/dev/null" for attempt in attempts)
    command += "; echo one > file.txt && git add file.txt && git -c user.name=a -c user.email=a@b commit -qm one"
    ctx = context(ws, mode="dont_ask", sandbox=_sandbox(ws))
    called = await call(TerminalTool(), ctx, command=command + " && echo committed")
    assert "committed" in called.text, called.text
    for repository in (ws, ws / "vendored"):
        config = (repository / ".git" / "config").read_text()
        assert "fsmonitor" not in config and "pager" not in config, config
        assert (repository / ".git" / "hooks").is_dir()
    assert not (ws / ".git" / "hooks" / "post-commit").exists()
    assert not (ws / ".git-moved").exists()
