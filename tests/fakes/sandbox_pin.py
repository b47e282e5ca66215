"""The sandbox mode every harness pins in the config it writes, so that a test's outcome does not depend on whether
bubblewrap is installed on the machine that runs it.

``[sandbox] mode = "auto"`` (the default of config.toml) sandboxes commands where bwrap works and makes every
command ask where it does not, with a notice in the session; a suite that left it unset would pass on one machine and
fail on the next. So the harnesses (``open_pair``, ``spawn_agent``, the lanes' configs) write ``mode = "off"``
unless the test names a mode (``sandbox="auto"``, with ``require_bwrap()``: tests/security runs the sandbox itself)
or its own config already has ``[sandbox] mode``, which wins. The config is edited with tomlkit, never by
appending text, so a test's own ``[sandbox]`` table keeps its other keys.
"""

from __future__ import annotations

from typing import Literal

import tomlkit

__all__ = ["DEFAULT_TEST_SANDBOX", "SandboxMode", "pin_sandbox"]

SandboxMode = Literal["auto", "required", "off"]
DEFAULT_TEST_SANDBOX: SandboxMode = "off"


def pin_sandbox(config: str, mode: SandboxMode | None = DEFAULT_TEST_SANDBOX) -> str:
    """``config`` with ``[sandbox] mode`` set to ``mode`` unless it sets one itself (None: leave it as it is)."""
    if mode is None:
        return config
    document = tomlkit.parse(config)
    section = document.get("sandbox")
    if section is None:
        section = tomlkit.table()
        document["sandbox"] = section
    if "mode" not in section:
        section["mode"] = mode
    return tomlkit.dumps(document)
