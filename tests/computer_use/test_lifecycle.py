"""Lifecycle: offered only when the driver command resolves; started lazily at the first call, once per session,
in the owner task; torn down with it; reported by --check with its path and version."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TypeVar

import pytest

from hermes_acp.computer_use import ComputerUse, check_driver
from hermes_acp.config import load_settings
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry

from .support import catalog_model, image_gate, open_desk

pytestmark = pytest.mark.anyio
T = TypeVar("T")


class _NoOwner:
    async def enter(self, manager: AbstractAsyncContextManager[T]) -> T:
        raise AssertionError("nothing may start here")


async def test_the_driver_starts_at_the_first_call_once_per_session(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        before = (desk.owner.entered, desk.state_exists())
        await desk.act(action="list_windows")
        labels = await desk.capture("Calculator")
        await desk.act(action="click", element=labels["3"])
        drivers = {entry["driver_pid"] for entry in desk.journal()}
        after = desk.owner.entered
    assert before == (0, False)
    assert after == 1 and len(drivers) == 1


async def test_closing_the_owner_task_stops_the_driver(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        await desk.act(action="list_windows")
        pid = desk.state()["driver"]["pid"]
        alive = Path(f"/proc/{pid}").exists()
    assert alive and not Path(f"/proc/{pid}").exists()  # the owner's teardown waited for the process to end


async def test_the_tool_is_offered_only_when_the_command_resolves(tmp_path: Path) -> None:
    found = load_settings({"HERMES_CUA_DRIVER_CMD": shlex.join([sys.executable, "-V"])}, home=tmp_path / "a")
    missing = load_settings({"HERMES_CUA_DRIVER_CMD": "no-such-cua-driver-binary mcp"}, home=tmp_path / "b")
    model = catalog_model()
    catalog = ModelCatalog([model], model.id)
    states = [
        ComputerUse.for_session(_NoOwner(), s, gate=image_gate(s, model, catalog, ProviderRegistry(s, {}))).available
        for s in (found, missing)
    ]
    assert states == [True, False]


async def test_the_driver_is_looked_up_once_per_process_for_each_path_and_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up: list[str | None] = []
    real_which = shutil.which

    def counting_which(name: str, mode: int = os.F_OK | os.X_OK, path: str | None = None) -> str | None:
        looked_up.append(path)
        return real_which(name, mode, path)

    monkeypatch.setattr(shutil, "which", counting_which)
    settings = load_settings({"HERMES_CUA_DRIVER_CMD": shlex.join([sys.executable, "mcp"])}, home=tmp_path)
    model = catalog_model()
    catalog, providers = ModelCatalog([model], model.id), ProviderRegistry(settings, {})
    first_env = {"PATH": str(tmp_path / "bin"), "SOME_API_KEY": "secret"}
    second_env = {"PATH": str(tmp_path / "other"), "SOME_API_KEY": "secret"}
    sessions = [
        ComputerUse.for_session(_NoOwner(), settings, gate=image_gate(settings, model, catalog, providers), env=env)
        for env in (first_env, dict(first_env), second_env)
    ]
    envs = [cu.driver.params.env for cu in sessions]
    assert all(cu.available for cu in sessions)
    assert looked_up == [str(tmp_path / "bin"), str(tmp_path / "other")]
    assert envs[0] is envs[1] and "SOME_API_KEY" not in envs[0] and envs[2]["PATH"] == str(tmp_path / "other")


async def test_check_reports_the_driver_path_and_version(tmp_path: Path) -> None:
    script = tmp_path / "fake-driver"
    script.write_text("#!/bin/sh\necho 'cua-driver 0.37.0'\n")
    script.chmod(0o755)
    present = await check_driver(load_settings({"HERMES_CUA_DRIVER_CMD": f"{script} mcp"}, home=tmp_path / "a"))
    absent = await check_driver(load_settings({"HERMES_CUA_DRIVER_CMD": "no-such-driver mcp"}, home=tmp_path / "b"))
    assert (present.ok, present.path, present.version) == (True, str(script), "cua-driver 0.37.0")
    assert "0.37.0" in present.describe()
    assert (absent.ok, absent.path) == (False, None) and "not found" in absent.describe()


async def test_a_driver_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    async with open_desk(tmp_path, driver=[sys.executable, "-c", "raise SystemExit(3)"]) as desk:  # exits at once
        outcome = await desk.act(action="capture", app="Calculator")
    assert outcome.failed and outcome.error_code == "driver_unavailable"
