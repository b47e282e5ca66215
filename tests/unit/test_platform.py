"""The platform seam's pieces that run on every system: the case rule, peer-credential parsing (a recorded macOS
``xucred``), the launcher's limits, locks on an open file, psutil's tree, shells, the Windows hard blocks, the
per-system facts and the README's table that repeats them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_acp.exec.hard_blocks import check_command
from hermes_acp.exec.hard_blocks.windows import windows_block_reason
from hermes_acp.exec.secrets import is_secret_name
from hermes_acp.platform import locks, peers, processes, rlimits, system
from hermes_acp.platform.case import fold
from hermes_acp.platform.facts import FACTS
from hermes_acp.platform.shells import Shell, shell_for
from hermes_acp.tools.policy import is_sensitive

ROOT = Path(__file__).resolve().parents[2]

# Laid out as <sys/ucred.h> has it (uid 501, staff/everyone/localaccounts; then all 16 groups).
XUCRED_3 = bytes.fromhex("00000000f501000003000000140000000c0000003d000000" + "00" * 52)
XUCRED_16 = bytes.fromhex(
    "00000000f501000010000000140000000c0000003d0000004f000000500000005100000062000000bd020000"
    "2100000064000000cc000000fa0000008b0100008e0100008f01000090010000"
)


@pytest.mark.parametrize(
    "name", [".GIT/hooks/pre-commit", ".Git/config", ".ENV", ".env.LOCAL", "Id_RSA", "server.PEM", ".SSH/id_ed25519"]
)
def test_sensitive_names_in_any_case_are_sensitive(name: str) -> None:
    assert is_sensitive(Path(name))


@pytest.mark.parametrize("name", [".ENV", "Server.PEM", "ID_RSA", "tls.Key", ".env::$DATA", ".env."])
def test_secret_names_in_any_case_are_masked(name: str) -> None:
    assert is_secret_name(name)


def test_folding_keeps_different_names_apart() -> None:
    assert fold("Straße") == fold("STRASSE")
    assert fold("e\u0301") == fold("\u00e9")
    assert not is_secret_name("id_rsa.pub") and not is_secret_name("README.md")
    assert not is_sensitive(Path("src/gitconfig.py"))


def test_a_recorded_xucred_parses_to_its_uid_and_groups() -> None:
    assert len(XUCRED_3) == peers.XUCRED.size == 76
    assert peers.parse_xucred(XUCRED_3) == (501, (20, 12, 61))
    uid, groups = peers.parse_xucred(XUCRED_16)
    assert uid == 501 and len(groups) == 16 and groups[-1] == 400


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (XUCRED_3[:40], "short xucred"),
        (b"\x01" + XUCRED_3[1:], "version 1"),
        (XUCRED_3[:8] + b"\x11\x00" + XUCRED_3[10:], "17 groups"),
    ],
)
def test_a_strange_xucred_is_refused(raw: bytes, problem: str) -> None:
    with pytest.raises(OSError, match=problem):
        peers.parse_xucred(raw)


def test_the_peer_of_a_socket_pair_is_this_user() -> None:
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        assert peers.peer_uid(left) == peers.current_uid()
    assert peers.owned_by_me(os.stat(__file__))


def test_the_launcher_sets_its_limits_and_a_session_then_becomes_the_command(tmp_path: Path) -> None:
    report = (
        "import json, os, resource; print(json.dumps([resource.getrlimit(resource.RLIMIT_CPU),"
        " resource.getrlimit(resource.RLIMIT_FSIZE), resource.getrlimit(resource.RLIMIT_CORE),"
        " os.getsid(0) == os.getpid()]))"
    )
    line = rlimits.launcher(cpu_s=7, file_bytes=1 << 20, data_bytes=0, new_session=True)
    done = subprocess.run([*line, sys.executable, "-c", report], capture_output=True, check=True, timeout=30)
    cpu, fsize, core, own_session = json.loads(done.stdout)
    assert cpu == [7, 7 + rlimits.CPU_GRACE_S]
    assert fsize == [1 << 20, 1 << 20]
    assert core == [0, 0]
    assert own_session is True


def test_a_lock_on_an_open_file_excludes_another_and_waits_bounded(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    first = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    second = os.open(path, os.O_RDWR)
    try:
        assert locks.try_lock(first)
        with locks.held(second, wait_s=0.05) as got:
            assert got is False
        locks.unlock(first)
        with locks.held(second, wait_s=0.05) as got:
            assert got is True
            assert not locks.try_lock(first)
    finally:
        os.close(first)
        os.close(second)


def test_psutil_s_tree_ends_a_child_and_the_grandchild_that_outlived_it() -> None:
    """The shell starts a background sleep and exits; the tree, refreshed while the shell ran, still ends it."""
    import psutil

    script = "sleep 300 & echo $!; read line"
    with subprocess.Popen(
        ["/bin/sh", "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, **processes.spawn_options()
    ) as shell:
        assert shell.stdout is not None and shell.stdin is not None
        grandchild = psutil.Process(int(shell.stdout.readline()))
        tree = processes.PsutilTree(shell.pid)
        assert tree.count() == 2
        shell.stdin.close()
        shell.wait(timeout=30)
    assert tree.alive(), "the sleep outlived its shell"
    tree.kill()
    grandchild.wait(timeout=10)
    assert not tree.alive()


def test_shells_run_a_command_as_each_expects() -> None:
    assert Shell("/bin/bash", "bash").argv("echo hi") == ["/bin/bash", "-c", "echo hi"]
    ps = Shell("pwsh.exe", "powershell").argv("Get-Date")
    assert ps[:5] == ["pwsh.exe", "-NoLogo", "-NoProfile", "-NonInteractive", "-Command"]
    assert "Get-Date" in ps[5] and "exit $LASTEXITCODE" in ps[5]
    assert Shell("C:\\Windows\\System32\\cmd.exe", "cmd").argv("dir") == [
        "C:\\Windows\\System32\\cmd.exe",
        "/d",
        "/s",
        "/c",
        "dir",
    ]
    with pytest.raises(FileNotFoundError, match="no-such-shell"):
        shell_for("no-such-shell")
    assert shell_for().grammar in ("bash", "posix")


@pytest.mark.parametrize(
    "command",
    [
        "Remove-Item -Recurse -Force C:\\",
        "rm -r -fo $env:USERPROFILE",
        "ri C:/Windows -Recurse",
        "rd /s /q C:\\",
        "del /s /q %USERPROFILE%",
        "Format-Volume -DriveLetter D",
        "format D: /q",
        "diskpart /s wipe.txt",
        "Set-ExecutionPolicy Unrestricted -Scope CurrentUser",
        "vssadmin delete shadows /all",
        "reg delete HKLM\\Software\\Foo /f",
        "Stop-Computer -Force",
        "shutdown /s /t 0",
        "cipher /w:C:",
        "bcdedit /set {default} recoveryenabled no",
    ],
)
def test_destructive_powershell_and_cmd_forms_are_refused(command: str) -> None:
    assert windows_block_reason(command) is not None
    assert check_command(command, "powershell").blocked is not None


@pytest.mark.parametrize(
    "command",
    ["Remove-Item -Recurse .\\build", "rd /s /q out", "Get-ChildItem C:\\", "Set-ExecutionPolicy RemoteSigned", "dir"],
)
def test_ordinary_powershell_and_cmd_commands_pass(command: str) -> None:
    assert windows_block_reason(command) is None
    assert check_command(command, "cmd").blocked is None


def test_each_system_has_its_backend_and_shared_mode_where_it_can() -> None:
    assert system.sandbox_kind("linux") == ("bwrap", None)
    assert system.sandbox_kind("wsl") == ("bwrap", None)
    assert system.sandbox_kind("darwin") == ("seatbelt", None)
    kind, why = system.sandbox_kind("win32")
    assert kind == "none" and why == "there is no sandbox for Windows yet"
    assert system.SHARED_MODE_REFUSAL == "shared mode needs macOS or Linux for now"
    if sys.platform == "linux":
        assert system.shared_mode_problem() is None
        assert system.max_socket_path_bytes() == 107


def test_the_readme_table_says_what_check_says() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for row in FACTS.values():
        line = f"| {row.system} | {row.contained} | {row.asks} | {row.missing} | {row.shared} | {row.tested} |"
        assert line in readme, row.system


def test_the_classifiers_and_the_registry_entry_agree_with_the_table() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for classifier in (
        "Operating System :: POSIX :: Linux",
        "Operating System :: MacOS",
        "Operating System :: Microsoft :: Windows",
    ):
        assert f'"{classifier}"' in pyproject
    description = json.loads((ROOT / "registry" / "agent.json").read_text(encoding="utf-8"))["description"]
    assert "macOS" in description and "Windows" in description and "sandbox" in description
