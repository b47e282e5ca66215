"""``hermes-acp sandbox-profile``: what would wrap a command started in a folder, printed for a person to read.

``--os macos`` prints the Seatbelt profile and its parameters, ``--os linux`` the bubblewrap line, on any machine:
both are renderings of the same ``SandboxPolicy``, computed from this machine's files and ``[sandbox]`` settings
(only looking: no folder is created, no probe is run). On another system than the target, the target's system
layout is assumed as it ships. Knows nothing about sessions.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Literal

from hermes_acp.core import ModeId

from . import bwrap, seatbelt
from .sandbox import Sandbox
from .sandbox_policy import SandboxPolicy
from .view import View

__all__ = ["audit_policy", "sandbox_profile"]

TargetOs = Literal["macos", "linux"]
_COMMAND = ["/bin/sh", "-c", "COMMAND"]


def audit_policy(sandbox: Sandbox, target: TargetOs, mode: ModeId, cwd: Path) -> SandboxPolicy:
    """The policy a command started in ``cwd`` would get in ``mode`` (blocking: the view is computed)."""
    environ = sandbox.environment()
    request = replace(sandbox.view_request([cwd], environ), prepare=False, target=target)
    view = View.compute(request, empty=Path(os.devnull))
    network = sandbox.network and mode != "read_only"
    scratch = "$TMPDIR/hermes-acp-PID/cmd-N" if target == "macos" else None
    policy = sandbox.policy(view, network=network, cwd=cwd, env=sandbox.env_policy.base(environ), scratch=scratch)
    return policy


def sandbox_profile(sandbox: Sandbox, target: TargetOs, mode: ModeId, cwd: Path, say: Callable[[str], None]) -> int:
    policy = audit_policy(sandbox, target, mode, cwd)
    if target == "macos":
        profile = seatbelt.render_profile(policy)
        say(f";; Seatbelt profile for a command started in {cwd} ({mode} mode); paths are the -D parameters below")
        say(profile.text.rstrip("\n"))
        say(";; parameters (sandbox-exec -D NAME=PATH ... -p PROFILE /usr/bin/env -i VARS... COMMAND):")
        for name, path in profile.params.items():
            say(f";;   {name}={path}")
        return 0
    line = bwrap.render(policy, "bwrap", _COMMAND)
    say(f"# bubblewrap line for a command started in {cwd} ({mode} mode)")
    say(" \\\n    ".join(_grouped(line)))
    return 0


def _grouped(line: list[str]) -> list[str]:
    """The line split before each option, shell-quoted, one option per printed line."""
    groups: list[list[str]] = []
    for part in line:
        if part.startswith("--") or not groups:
            groups.append([part])
        else:
            groups[-1].append(part)
    return [" ".join(shlex.quote(part) for part in group) for group in groups]
