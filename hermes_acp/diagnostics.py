"""``hermes-acp --check``: a readable report of what the server would run with, and whether it can serve.

It loads the configuration exactly as the server does and says where each setting not at its default came from (the
file or an environment variable: ``checks.sources``), lists providers and models (with whether their keys are set,
never the keys; with ``--probe`` what each provider answers: ``checks.models``), checks the home folder and the free
space of its file system, opens the session store and checks its health (``PRAGMA quick_check``, schema version),
says whether commands run in the sandbox (probing bubblewrap as the server does), and finds the cua-driver and its
version. Exit status 0 means a configured model can work and the server can serve; 1 that the report names a
problem (each marked ✗). ``--json`` prints the same as one JSON object instead (``ok``, ``problems``, ``warnings``,
``settings``, ``providers``, ``default_model`` and the report's lines), for scripts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio

from hermes_acp import anchored
from hermes_acp.checks.models import check_models
from hermes_acp.checks.sources import report_sources
from hermes_acp.computer_use import check_driver
from hermes_acp.config import Settings, load_settings
from hermes_acp.errors import ConfigError, StorageError
from hermes_acp.exec.environment import SAFE_NAMES
from hermes_acp.exec.limits import enforcement
from hermes_acp.exec.sandbox import Sandbox
from hermes_acp.exec.view import View
from hermes_acp.home import default_home, make_private
from hermes_acp.platform.facts import facts
from hermes_acp.platform.shells import shell_for
from hermes_acp.platform.system import shared_mode_problem, system_name
from hermes_acp.storage.repair import repair_store
from hermes_acp.storage.sqlite import SqliteSessionStore, StoreHealth
from hermes_acp.transports.paths import host_paths
from hermes_acp.version import DISTRIBUTION, __version__

__all__ = ["run_check", "run_repair"]

_REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_OK, _BAD, _WARN = "✓", "✗", "!"
_NO_SPACE = 1024 * 1024
"""Less free space than this on the home's file system: turns cannot be stored."""
_LOW_SPACE = 100 * 1024 * 1024


def _dependencies() -> list[str]:
    """What the installed distribution requires to run (its metadata; the extras, such as dev, are left out)."""
    try:
        requirements = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return []
    names = []
    for requirement in requirements:
        match = _REQUIREMENT_NAME.match(requirement)
        if match and "extra ==" not in requirement:
            names.append(match.group())
    return names


def run_check(say: Callable[[str], None], *, probe: bool = False, as_json: bool = False) -> int:
    """Report through ``say`` (the command line passes print); 0 when a configured model can work and the server can
    serve. ``probe``: ask each provider; ``as_json``: one JSON object through ``say`` at the end, nothing before."""
    env = dict(os.environ)
    lines: list[str] = []

    def tell(line: str) -> None:
        lines.append(line)
        if not as_json:
            say(line)

    data: dict[str, Any] = {"version": __version__, "python": sys.version.split()[0]}
    problems = _run(env, tell, data, probe=probe)
    if as_json:
        marks = [line.strip() for line in lines]
        data.update(
            ok=problems == 0,
            problems=[line[2:] for line in marks if line.startswith(_BAD)],
            warnings=[line[2:] for line in marks if line.startswith(_WARN)],
            report=lines,
        )
        say(json.dumps(data, indent=2, ensure_ascii=False))
    return 0 if problems == 0 else 1


def _run(env: dict[str, str], say: Callable[[str], None], data: dict[str, Any], *, probe: bool) -> int:
    problems = 0
    say(f"hermes-acp {__version__} on Python {sys.version.split()[0]}")
    for name in _dependencies():
        try:
            say(f"  {_OK} {name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            say(f"  {_BAD} {name} is not installed")
            problems += 1
    home = default_home(env)
    data["home"] = str(home)
    say(f"Home: {home}")
    try:
        settings = load_settings(env)
    except ConfigError as exc:
        say(f"  {_BAD} configuration error:\n" + "\n".join(f"      {line}" for line in str(exc).splitlines()))
        say("Result: the configuration does not load")
        return 1
    data["config_file"] = str(settings.config_file) if settings.config_file else None
    say(f"  {_OK} config: {settings.config_file or 'none (defaults and environment)'}")
    problems += _check_home(settings, say)
    origins = report_sources(settings, say)
    data["settings"] = [o.as_json(data["config_file"]) for o in origins]
    models = check_models(settings, env, say, probe=probe)
    data.update(default_model=models.default_model, providers=models.providers)
    problems += models.problems
    _check_sandbox(settings, say)
    _check_driver(settings, say)
    say("Result: " + ("ready to serve" if problems == 0 else f"{problems} problem(s) to fix"))
    return problems


def _check_privacy(home: Path, say: Callable[[str], None]) -> None:
    """The home made private as every start makes it (``home.make_private``), saying what others could read."""
    tightened = make_private(home)
    if not tightened:
        return
    shown = ", ".join(f"{_relative(path, home)} ({mode:o} → {mode & ~0o077:o})" for path, mode in tightened)
    say(f"  {_WARN} others could read parts of the home; made private (files 0600, folders 0700): {shown}")


def _relative(path: Path, home: Path) -> str:
    return "the home itself" if path == home else str(path.relative_to(home))


def _check_home(settings: Settings, say: Callable[[str], None]) -> int:
    _check_privacy(settings.home, say)
    try:
        anchored.make_folders(settings.home, settings.home)
        probe = settings.home / ".write-check"
        anchored.write_file(settings.home, probe, b"ok", durable=False)
        anchored.remove_file(settings.home, probe)
    except OSError as exc:
        say(f"  {_BAD} {settings.home} is not writable: {exc.strerror or exc}")
        say(
            "      sessions can be listed and loaded but not changed; make it writable, or set HERMES_ACP_HOME to a"
            " writable folder"
        )
        return 1
    problems = _check_space(settings.home, say)
    try:
        health = anyio.run(_store_health, settings.state_db)
    except StorageError as exc:
        say(f"  {_BAD} {str(exc).split('. `hermes-acp --check`')[0]}")
        if exc.cause == "corrupt":
            _offer_repair(settings.state_db, say)
        return problems + 1
    if health.problems:
        say(f"  {_BAD} session store {settings.state_db} is damaged (PRAGMA quick_check):")
        say("\n".join(f"      {finding}" for finding in health.problems))
        _offer_repair(settings.state_db, say)
        return problems + 1
    say(f"  {_OK} session store: {settings.state_db}")
    say(
        f"      quick_check ok, schema version {health.schema_version} (current {health.latest_version}),"
        f" {_size(health.size_bytes)}"
    )
    return problems


def _offer_repair(path: Path, say: Callable[[str], None]) -> None:
    say(
        "      to repair it: close every editor's agent (and `hermes-acp host stop`), then run `hermes-acp --repair`:"
        f" what can be read is copied into a new store, and the damaged file is kept as {path.name}.damaged-<time>"
    )


def run_repair(say: Callable[[str], None]) -> int:
    """``hermes-acp --repair``: copy what can be read of a damaged store into a new one (``storage.repair``)."""
    settings_home = default_home(dict(os.environ))
    path = settings_home / "state.db"
    try:
        report = repair_store(path)
    except StorageError as exc:
        say(f"{_BAD} {exc}")
        return 1
    say(f"{_OK} repaired {path}: {report.describe()}")
    return 0


def _check_space(home: Path, say: Callable[[str], None]) -> int:
    free = shutil.disk_usage(home).free
    where = f"free on the file system holding {home}"
    if free < _NO_SPACE:
        say(f"  {_BAD} {_size(free)} {where}: turns cannot be stored")
        return 1
    say(f"  {_WARN if free < _LOW_SPACE else _OK} {_size(free)} {where}")
    return 0


async def _store_health(path: Path) -> StoreHealth:
    """Open the store as the server does (which creates or migrates it), check it, then close it."""
    store = await SqliteSessionStore.open(path)
    try:
        return await store.health()
    finally:
        await store.aclose()


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    size = count / 1024
    for unit in ("KiB", "MiB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def _check_platform(say: Callable[[str], None]) -> None:
    """The README's row for this system (``platform.facts``), and what differs from the row here."""
    row = facts()
    say(f"This system: {row.system}")
    say(f"  contained: {row.contained}")
    say(f"  asks: {row.asks}")
    say(f"  not available: {row.missing}")
    say(f"  shared mode: {row.shared}")
    say(f"  tested: {row.tested}")
    if system_name() == "wsl":
        say(f"  {_OK} WSL2: Linux rules apply (bubblewrap, cgroups)")
    shared = shared_mode_problem()
    if shared is not None:
        say(f"  {_WARN} --shared and `hermes-acp host`: {shared}")
    else:
        try:
            paths = host_paths(dict(os.environ))
        except OSError as exc:
            say(f"  {_WARN} --shared and `hermes-acp host`: {exc}")
        else:
            say(f"  session host socket (--shared): {paths.socket}")
            if paths.note is not None:
                say(f"    ({paths.note})")
    if system_name() == "win32":
        say("  the editor's terminals start in the editor's own environment (it cannot be cleared there)")


def _check_sandbox(settings: Settings, say: Callable[[str], None]) -> None:
    _check_platform(say)
    sandbox = Sandbox.from_settings(settings)
    availability = sandbox.probe()
    say(f"Commands ([sandbox] mode = {sandbox.mode!r}):")
    try:
        shell = shell_for(sandbox.shell)
        say(f"  shell: {shell.path} ({shell.grammar})")
    except FileNotFoundError as exc:
        say(f"  {_WARN} {exc}: commands cannot start")
    if sandbox.mode == "off":
        say(f"  {_WARN} the sandbox is off: commands run unconfined (the session modes alone decide)")
    elif availability.usable:
        network = "on (off in read_only mode)" if sandbox.network else "off"
        name = "Seatbelt" if availability.backend == "seatbelt" else "bubblewrap"
        say(f"  {_OK} sandboxed by {name} ({availability.tool}); network {network}")
    elif sandbox.mode == "required":
        say(f"  {_WARN} commands are refused: {availability.problem}")
    else:
        say(f"  {_WARN} no sandbox ({availability.problem}): every command asks for permission, in every mode")
    if availability.usable:
        _what_commands_see(sandbox, say)
    found = enforcement(prepare=False)
    say(f"  limits per command: {sandbox.limits.describe()}")
    for line in found.describe():
        say(f"      {line}")
    passed = sorted(sandbox.env_policy.pass_env)
    withheld = sandbox.env_policy.withheld_count(os.environ)
    say(
        f"  environment: the safe list ({', '.join(SAFE_NAMES[:6])}, …)"
        + (f" and pass_env ({', '.join(passed)})" if passed else "")
        + f"; {withheld} other variable(s) of this environment are not passed to child processes"
    )


def _what_commands_see(sandbox: Sandbox, say: Callable[[str], None]) -> None:
    """The view of a command started in the current folder (what a session there would give it)."""
    cwd = Path.cwd()
    request = replace(sandbox.view_request([cwd], os.environ), prepare=False)
    view = View.compute(request, empty=Path(os.devnull))
    home = view.home or "(the home is inside the session's directory: visible there, its credential files masked)"
    say(f"  what a command started in {cwd} sees (`hermes-acp sandbox-profile` prints the whole line):")
    system = ", ".join(m.path for m in view.mounts if m.kind in ("ro", "symlink") and m.path.count("/") == 1)
    say(f"      system, read-only: {system}, parts of /run; /etc secrets masked")
    say(f"      home: a fresh, empty {home}")
    shown = [m.path for m in view.mounts if m.kind in ("ro", "rw") and view.home and m.path.startswith(view.home + "/")]
    say(f"      home_read / home_write present: {', '.join(shown) or 'none'}")
    if view.home_missing:
        say(f"      not present here (skipped): {', '.join(view.home_missing)}")
    say(f"      {cwd}: read-write, {view.scanned:,} files scanned, {len(view.masked)} path(s) masked in all")
    say("      not visible: other users' homes, /srv, /mnt, /media, /var/lib and every other top-level folder")


def _check_driver(settings: Settings, say: Callable[[str], None]) -> None:
    check = anyio.run(check_driver, settings)
    say(f"  {_OK if check.ok else _WARN} {check.describe()}")
