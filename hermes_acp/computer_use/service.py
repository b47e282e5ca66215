"""What the rest of hermes-acp wires: ``ComputerUse.for_session`` (the tool and driver, given the image gate) and
``check_driver`` (for ``hermes-acp --check``).

The tool is offered only when ``computer_use.driver_command`` resolves (``shutil.which`` on its first word); the
driver itself starts lazily at the session's first computer_use call, inside the session's owner task. The
driver's environment is the allow-list of every child (``exec.environment``: the safe variables and
``[sandbox] pass_env``) plus what it needs to reach the desktop (``DESKTOP_NAMES``: the display, the session bus,
the runtime folder) and cua-driver's own settings, with its telemetry and update check off unless set explicitly.
Both are worked out once per process for each command, ``PATH`` and environment (``session/new`` runs on the event
loop, and ``shutil.which`` stats the disk), so a driver installed later is seen after a restart. Its stderr goes to
``<home>/logs/cua-driver.log``.

It deliberately knows nothing about sessions beyond the ``OwnerRuntime`` port.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import anyio

from hermes_acp.config import DEFAULT_DRIVER_COMMAND, Settings
from hermes_acp.core.notice import Notice
from hermes_acp.exec.environment import DESKTOP_NAMES, EnvPolicy
from hermes_acp.images.gate import SessionImageGate

from .driver import DriverClient, DriverParams, OwnerRuntime
from .tool import ComputerUseTool

__all__ = ["ComputerUse", "DriverCheck", "check_driver", "driver_environment", "resolve_driver"]

VERSION_TIMEOUT_S = 5.0
_DRIVER_DEFAULTS = {
    "CUA_DRIVER_RS_TELEMETRY_ENABLED": "0",
    "CUA_TELEMETRY_ENABLED": "0",
    "CUA_DRIVER_RS_UPDATE_CHECK": "false",
}
"""cua-driver's own settings: passed on when set, these values otherwise (no telemetry, no update check)."""


def resolve_driver(command: Sequence[str], env: Mapping[str, str] | None = None) -> str | None:
    """The absolute path of the driver executable, or None when it cannot be found (cached per ``PATH``)."""
    if not command:
        return None
    return _which(command[0], (env if env is not None else os.environ).get("PATH"))


@functools.lru_cache(maxsize=16)
def _which(name: str, path: str | None) -> str | None:
    return shutil.which(name, path=path)


def driver_environment(env: Mapping[str, str], settings: Settings) -> Mapping[str, str]:
    """What the driver starts with (cached per environment; read-only): see the module docstring."""
    return _driver_environment(frozenset(env.items()), frozenset(settings.sandbox.pass_env))


@functools.lru_cache(maxsize=8)
def _driver_environment(env: frozenset[tuple[str, str]], pass_env: frozenset[str]) -> Mapping[str, str]:
    chosen = EnvPolicy(pass_env).base(dict(env), extra_names=(*DESKTOP_NAMES, *_DRIVER_DEFAULTS))
    for name, value in _DRIVER_DEFAULTS.items():
        chosen.setdefault(name, value)
    return MappingProxyType(chosen)


@dataclass(frozen=True, slots=True)
class DriverCheck:
    command: list[str]
    path: str | None
    version: str | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.path is not None and self.error is None

    def describe(self) -> str:
        if self.path is None:
            return f"cua-driver: not found ({self.command[0] if self.command else 'no command'}); computer_use is off"
        if self.error is not None:
            return f"cua-driver: {self.path} ({self.error})"
        return f"cua-driver: {self.path} {self.version or '(version unknown)'}"


async def check_driver(settings: Settings, *, timeout_s: float = VERSION_TIMEOUT_S) -> DriverCheck:
    """Where the driver is and what ``<driver> --version`` says (bounded), for ``hermes-acp --check``."""
    command = list(settings.computer_use.driver_command)
    path = resolve_driver(command)
    if path is None:
        return DriverCheck(command, None, None)
    try:
        with anyio.fail_after(timeout_s):
            done = await anyio.run_process([path, "--version"], check=False)
    except TimeoutError:
        return DriverCheck(command, path, None, f"`--version` did not answer within {timeout_s:g} s")
    except OSError as exc:
        return DriverCheck(command, path, None, f"cannot run it: {exc.strerror or exc}")
    output = (done.stdout or b"").decode("utf-8", "replace").strip() or (done.stderr or b"").decode(
        "utf-8", "replace"
    ).strip()
    if done.returncode != 0:
        return DriverCheck(command, path, None, f"`--version` exited with status {done.returncode}")
    return DriverCheck(command, path, output.splitlines()[0] if output else None)


@dataclass(frozen=True, slots=True)
class ComputerUse:
    """One session's computer_use: the tool (offer it when ``available``) and its driver."""

    tool: ComputerUseTool
    driver: DriverClient
    available: bool
    command: tuple[str, ...] = DEFAULT_DRIVER_COMMAND

    def notice(self) -> Notice | None:
        """A warning when the user asked for a driver (a command other than the default) that cannot be found;
        with the default command, computer_use is simply not offered (``--check`` says why)."""
        if self.available or self.command == DEFAULT_DRIVER_COMMAND:
            return None
        return Notice(
            "warning",
            "computer_use is off: the cua-driver was not found",
            f"{self.command[0] if self.command else 'no command'} (computer_use.driver_command or"
            " HERMES_CUA_DRIVER_CMD) is not on PATH; `hermes-acp --check` shows what was looked for",
        )

    @classmethod
    def for_session(
        cls,
        runtime: OwnerRuntime,
        settings: Settings,
        *,
        gate: SessionImageGate,
        cache_dir: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ComputerUse:
        base_env = os.environ if env is None else env
        command = list(settings.computer_use.driver_command)
        path = resolve_driver(command, base_env)
        params = DriverParams(
            argv=[path or command[0], *command[1:]],
            env=driver_environment(base_env, settings),
            call_timeout_s=settings.computer_use.call_timeout_s,
            stderr_log=settings.logs_dir / "cua-driver.log",
        )
        driver = DriverClient(runtime, params)
        tool = ComputerUseTool(driver, gate, cache_dir or settings.cache_dir)
        return cls(tool=tool, driver=driver, available=path is not None, command=tuple(command))
