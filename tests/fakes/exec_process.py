"""``python -m hermes_acp exec`` as a script or a CI job runs it: a home of its own with a config naming the scripted
model server, a workspace as its cwd, stdout and stderr kept apart, the exit code.

``ExecHome.run`` runs it to its end (bounded); ``ExecHome.start`` leaves it running for a test that signals it.
``ExecRun.result`` is the last line of ``--json`` (the result object), ``ExecRun.updates`` the lines before it.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

from .agent_process import REPO
from .sandbox_pin import pin_sandbox

__all__ = ["EXEC_TIMEOUT_S", "ExecHome", "ExecRun", "exec_home"]

EXEC_TIMEOUT_S = 120.0


@dataclass
class ExecRun:
    code: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[Any]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    @property
    def result(self) -> dict[str, Any]:
        last = self.lines[-1]
        assert last.get("type") == "result", f"the last line is not the result: {last}"
        return dict(last)

    @property
    def updates(self) -> list[dict[str, Any]]:
        return [line for line in self.lines[:-1]]


@dataclass
class ExecHome:
    home: Path
    workspace: Path
    env: dict[str, str]

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "hermes_acp", "exec", *args]

    async def run(self, *args: str, stdin: bytes = b"", timeout: float = EXEC_TIMEOUT_S) -> ExecRun:
        with anyio.fail_after(timeout):
            done = await anyio.run_process(self.argv(*args), env=self.env, input=stdin, check=False, cwd=self.workspace)
        return ExecRun(done.returncode, done.stdout.decode(), done.stderr.decode())

    async def start(self, *args: str) -> Process:
        """The process, running (its stdin closed): the caller waits for it (bounded) and reads its pipes."""
        return await anyio.open_process(self.argv(*args), env=self.env, cwd=self.workspace, stdin=None)


def exec_home(
    tmp_path: Path, base_url: str, *, config_extra: str = "", models: str = '["m"]', max_retries: int = 0
) -> ExecHome:
    """A home whose config names the provider ``fx`` at ``base_url`` (its ``models``, ``max_retries``), the sandbox
    pinned (``sandbox_pin``), and ``config_extra`` after it; a workspace beside it."""
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    config = (
        '[model]\ndefault = "fx:m"\n\n'
        f'[providers.fx]\nkind = "openai"\nbase_url = "{base_url}"\nmodels = {models}\nmax_retries = {max_retries}\n'
    )
    (home / "config.toml").write_text(pin_sandbox(config + config_extra))
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "HERMES_ACP_HOME": str(home),
        "HERMES_CUA_DRIVER_CMD": "no-such-driver",
        "PYTHONPATH": str(REPO),
    }
    return ExecHome(home, workspace, env)
