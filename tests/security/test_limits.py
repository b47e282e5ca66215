"""What one command may use (``[sandbox.limits]``), with real bubblewrap runs of the terminal tool.

No fork bomb runs before its limit is shown to be in place from inside the sandbox (the cgroup's ``pids.max``
where the machine gives us one, else ``RLIMIT_NPROC`` where the kernel applies it to us), and none runs where the
kernel would not stop it (root without a cgroup). Each bomb must end as a failed command that says why, and the
next command must run as usual.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_acp.errors import HardBlockedError
from hermes_acp.exec.limits import CommandLimits, Limits, enforcement
from hermes_acp.exec.sandbox import Sandbox
from hermes_acp.tools.terminal import TerminalTool
from tests.tools.helpers import call, context

from .support import outside_tmp, require_bwrap

pytestmark = pytest.mark.anyio

SMALL = Limits(processes=64, memory_mib=1024, cpu_s=600, file_size_mib=64, tmp_mib=64)
BASH_BOMB = "f(){ f & }; while :; do f; done"
BOMBS = {
    "bash": BASH_BOMB,
    "bash, wrapped in base64": f"echo {base64.b64encode(BASH_BOMB.encode()).decode()} | base64 -d | bash",
    "perl": "perl -e 'fork while 1'",
    "python": "python3 -c 'import os\nwhile True:\n    os.fork()'",
    "ruby": "ruby -e 'loop { fork }'",
    "the classic": ":(){ :|:& };:",
}


@pytest.fixture
def ws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    require_bwrap()
    with outside_tmp() as root:
        (root / "ws").mkdir()
        (root / "home").mkdir()
        monkeypatch.setenv("HOME", str(root / "home"))
        yield root / "ws"


def _sandbox(ws: Path, limits: Limits = SMALL) -> Sandbox:
    return Sandbox(home=ws.parent / "agent-home", limits=limits)


async def _run(ws: Path, command: str, limits: Limits = SMALL, timeout_s: float = 60) -> tuple[str, dict[str, object]]:
    ctx = context(ws, mode="dont_ask", sandbox=_sandbox(ws, limits))
    called = await call(TerminalTool(), ctx, command=command, timeout_s=timeout_s)
    return called.text, called.output


async def _prove_the_process_limit(ws: Path) -> None:
    """From inside: the cgroup's pids.max, or the RLIMIT_NPROC the kernel applies to this user, is SMALL's."""
    found = enforcement()
    if found.cgroups is not None:
        v1 = "cat /sys/fs/cgroup/pids$(grep -E '^[0-9]+:pids:' /proc/self/cgroup | cut -d: -f3)/pids.max 2>/dev/null"
        v2 = "cat /sys/fs/cgroup$(grep '^0::' /proc/self/cgroup | cut -d: -f3)/pids.max"
        text, _ = await _run(ws, f"{v1} || {v2}")
        assert text.split("\n")[1] == str(SMALL.processes), text
        return
    if found.nproc == "root" or found.prlimit is None:
        pytest.skip("the kernel would not stop a fork bomb here (root without a pids cgroup): not running one")
    text, _ = await _run(ws, "ulimit -u")
    assert text.split("\n")[1] == str(SMALL.processes), text


async def test_the_limits_are_in_place_inside(ws: Path) -> None:
    await _prove_the_process_limit(ws)
    text, _ = await _run(ws, "ulimit -d; ulimit -f; ulimit -t; ulimit -c; df -m /tmp ~ | tail -2")
    lines = text.split("\n")
    assert lines[1] == str(SMALL.memory_mib * 1024), "RLIMIT_DATA, in KiB"
    assert lines[2] == str(SMALL.file_size_mib * 1024), "RLIMIT_FSIZE, in 1024-byte blocks"
    assert lines[3] == str(SMALL.cpu_s) and lines[4] == "0"
    assert all(line.split()[1] == str(SMALL.tmp_mib) for line in lines[5:7]), "tmpfs sizes in MiB"


@pytest.mark.parametrize("form", list(BOMBS))
async def test_every_fork_bomb_ends_as_a_failed_command_and_the_next_one_runs(ws: Path, form: str) -> None:
    command = BOMBS[form]
    interpreter = command.split()[0]
    if interpreter in ("perl", "python3", "ruby") and shutil.which(interpreter) is None:
        pytest.skip(f"{interpreter} is not installed")
    await _prove_the_process_limit(ws)
    if form == "the classic":
        with pytest.raises(HardBlockedError, match="fork bomb"):  # refused before it runs: a failed call too
            await _run(ws, command)
    else:
        text, raw = await _run(ws, command)
        assert raw["ended_by"] is not None or raw["exit_code"] != 0, text
        assert "process limit" in text or "processes" in text, text
    after, raw = await _run(ws, "echo still fine")
    assert after == "Exit code 0.\nstill fine" and raw["ended_by"] is None


async def test_without_a_cgroup_the_sandbox_s_tasks_are_counted(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no cgroup can be made, the agent counts the tasks of the sandbox's PID namespace and ends a command that
    reaches the limit. Proven with a bounded number of sleeping processes, not a bomb."""
    found = dataclasses.replace(enforcement(), cgroups=None)
    monkeypatch.setattr("hermes_acp.exec.sandbox.enforcement", lambda: found)
    limits = dataclasses.replace(SMALL, processes=12)
    text, raw = await _run(ws, "for i in $(seq 20); do sleep 60 & done; wait", limits=limits, timeout_s=30)
    assert raw["ended_by"] is not None and "12 processes" in text, text
    assert raw["timed_out"] is False


async def test_memory_cpu_file_size_and_tmp_limits_stop_a_runaway_with_a_clear_note(ws: Path) -> None:
    memory, _ = await _run(ws, "python3 -c 'bytearray(3 * 1024 ** 3)'")
    assert "MemoryError" in memory and "ran out of its memory" in memory
    cpu, raw = await _run(ws, "python3 -c 'while True: pass'", limits=dataclasses.replace(SMALL, cpu_s=1))
    assert raw["signal"] in ("SIGXCPU", "SIGKILL") or "CPU time" in cpu, cpu
    assert "CPU time" in cpu
    size, _ = await _run(
        ws, "head -c 2000000 /dev/zero > big.bin; ls -l big.bin", limits=dataclasses.replace(SMALL, file_size_mib=1)
    )
    assert "File size limit exceeded" in size and "file_size_mib" in size
    assert (ws / "big.bin").stat().st_size <= 1024 * 1024
    tmp, _ = await _run(
        ws, "head -c 100000000 /dev/zero > /tmp/fill; echo done", limits=dataclasses.replace(SMALL, file_size_mib=1024)
    )
    assert "No space left on device" in tmp and "done" in tmp and "tmp_mib" in tmp


def test_limits_leave_no_cgroup_behind() -> None:
    found = enforcement()
    if found.cgroups is None:
        pytest.skip(f"no cgroup here: {found.cgroup_problem}")
    limits = CommandLimits.make(SMALL, found, for_editor=False)
    assert limits.in_cgroup and all(folder.is_dir() for folder in limits.folders)
    assert (limits.folders[0] / "pids.max").read_text().strip() == str(SMALL.processes)
    folders = list(limits.folders)
    limits.close()
    assert not any(folder.exists() for folder in folders)
    mine = [child.name for child in found.cgroups.pids.iterdir() if child.name.startswith(f"hermes-acp-{os.getpid()}-")]
    assert mine == []


def test_a_delegated_cgroup_v2_the_agent_holds_alone_gives_each_command_a_child(tmp_path: Path) -> None:
    """cgroup v2's decision, on a stand-in of the agent's cgroup folder (the files the kernel shows there): the agent
    moves itself into a leaf, enables pids and memory for children, and each command gets a child with its limits.
    Where another process shares the cgroup, or the controller is not delegated, it says so and uses none."""
    from hermes_acp.exec import limits as limits_module

    own = tmp_path / "own"
    own.mkdir()
    (own / "cgroup.controllers").write_text("cpu pids memory\n")
    (own / "cgroup.subtree_control").write_text("\n")
    (own / "cgroup.procs").write_text(f"{os.getpid()}\n")
    found, problem = limits_module.unified_cgroups(own, prepare=True)
    assert problem is None and found is not None and found.version == 2
    assert (own / "hermes-acp-agent" / "cgroup.procs").read_text() == str(os.getpid())
    assert (own / "cgroup.subtree_control").read_text() == "+pids +memory"
    enforcement_here = limits_module.Enforcement(found, "/usr/bin/prlimit", "sandbox")
    command = CommandLimits.make(SMALL, enforcement_here, for_editor=False)
    [child] = command.folders
    assert (child / "pids.max").read_text() == "64" and (child / "memory.max").read_text() == str(1024 * 1024 * 1024)
    assert command.outer(["bwrap"])[-2:] == ["--", "bwrap"] and str(child / "cgroup.procs") in command.outer(["x"])
    assert CommandLimits.make(SMALL, enforcement_here, for_editor=True).folders == [], "v2: not for the editor"
    (own / "cgroup.subtree_control").write_text("\n")
    (own / "cgroup.procs").write_text(f"{os.getpid()}\n1\n")
    assert "other processes share" in (limits_module.unified_cgroups(own, prepare=True)[1] or "")
    (own / "cgroup.controllers").write_text("cpu memory\n")
    assert "not delegated" in (limits_module.unified_cgroups(own, prepare=True)[1] or "")
