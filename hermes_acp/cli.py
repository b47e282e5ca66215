"""The ``hermes-acp`` command: serve ACP on stdio (default), ``--shared``, ``--connect URL`` (a stdio front door to
a remote host's door: ``transports.connect``), ``host [status|stop|token]``, ``exec`` (one prompt without an editor:
``headless``), ``--check`` (``--probe``, ``--json``), ``--repair``, ``--version``, ``--setup``, ``sandbox-profile``;
``--config FILE`` for a config file other than the home's (every mode reads it: it is passed on as
``HERMES_ACP_CONFIG``).

Serving must answer ``initialize`` fast, so this module imports almost nothing; the rest of the server is loaded in
a worker thread while the dispatcher already answers (``load_app``). With ``--shared`` or ``[host] mode =
"shared"`` the process is the front door to the session host instead (``host.frontdoor``: the standard library
only). Only this module (and the interactive check and setup) may print; in serve mode stdout belongs to the
protocol.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hermes_acp.version import __version__

if TYPE_CHECKING:
    import argparse

    from hermes_acp.protocol.connection import Serve

__all__ = ["load_app", "main"]


def _parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="hermes-acp",
        description="An ACP agent server. Without options it serves the Agent Client Protocol on stdin/stdout.",
        epilog="Home folder: $HERMES_ACP_HOME (default ~/.hermes-acp) holds config.toml, state.db, cache/ and logs/.",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--check", action="store_true", help="print a report and exit 0 only if a configured model can work"
    )
    group.add_argument(
        "--repair",
        action="store_true",
        help="copy what can be read of a damaged session store into a new one (the damaged file is kept)",
    )
    group.add_argument("--version", action="store_true", help="print the version and exit")
    group.add_argument("--setup", action="store_true", help="interactive setup of a model provider")
    group.add_argument(
        "--connect",
        metavar="URL",
        help="relay stdio to a remote host's door (wss://host/acp), with --token-file FILE (or HERMES_ACP_TOKEN)"
        " and --cacert FILE",
    )
    group.add_argument(
        "--shared",
        action="store_true",
        help='relay to the session host (started when none runs): sessions outlive the editor ([host] mode = "shared")',
    )
    parser.add_argument(
        "--verbose", action="store_true", help="log everything to stderr too (by default only warnings and errors)"
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="read (and let --setup write) this config file instead of $HERMES_ACP_HOME/config.toml",
    )
    parser.add_argument(
        "--probe", action="store_true", help="with --check: ask each provider (its /models and a one-token request)"
    )
    parser.add_argument("--json", action="store_true", help="with --check: print the report as one JSON object")
    return parser


def _leave_out_unused() -> None:
    """Modules the server never uses, kept from loading (a serve and an ``exec`` run both start this way)."""
    # structlog's console renderer imports rich when it is installed (mcp pulls it in); the server only writes
    # JSON, and skipping rich cuts a quarter of a second from start-up.
    sys.modules.setdefault("rich", None)  # type: ignore[arg-type]
    # httpx imports its command-line client when click is installed (mcp brings it), which imports click and
    # pygments before it finds rich missing: ~25 ms of the first turn for a client the server never runs.
    sys.modules.setdefault("click", None)  # type: ignore[arg-type]
    # pydantic looks for plugins of its own (observability hooks) in every installed distribution's entry points
    # when it builds the first model: importlib.metadata, the email parser for each METADATA file, ~1.5 MB and tens
    # of ms of the first session/new, for plugins the server never uses. Its documented switch turns the lookup off
    # (a user who sets it keeps their value; commands and MCP servers get allow-listed environments).
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def load_app() -> Serve:
    """The server's connection runner, loaded (what stdio loads in a worker thread while it answers ``initialize``);
    the cyclic collector, off while it loads, is on again when this returns."""
    _leave_out_unused()
    try:
        from hermes_acp.app import run_connection
    finally:
        # The objects of start-up (modules, classes, pydantic's schemas) live as long as the process: keep them
        # out of every later collection, and collect again from here on (see ``_serve``).
        gc.freeze()
        gc.enable()
    return run_connection


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:  # how editors launch us: serve without paying for argparse (~15 ms of the answer to initialize)
        if _configured_shared(os.environ):
            _front_door()
        _serve()
        return
    subcommand = argv[0] in (
        "host",
        "sandbox-profile",
        "exec",
    )  # their arguments are theirs (a prompt may say --connect)
    if not subcommand and any(arg == "--connect" or arg.startswith("--connect=") for arg in argv):
        from hermes_acp.transports.connect import run_connect  # as fast as the local front door

        sys.exit(run_connect(argv))
    if argv[0] == "host":
        sys.exit(_host(argv[1:]))
    if argv[0] == "sandbox-profile":
        sys.exit(_sandbox_profile(argv[1:]))
    if argv[0] == "exec":
        _exec(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    if (args.probe or args.json) and not args.check:
        parser.error("--probe and --json go with --check")
    if args.config is not None:
        from hermes_acp.home import CONFIG_VARIABLE

        os.environ[CONFIG_VARIABLE] = os.path.abspath(os.path.expanduser(args.config))
    if args.version:
        print(f"hermes-acp {__version__}")
        return
    if args.check:
        from hermes_acp.diagnostics import run_check

        sys.exit(run_check(print, probe=args.probe, as_json=args.json))
    if args.repair:
        from hermes_acp.diagnostics import run_repair

        sys.exit(run_repair(print))
    if args.setup:
        from hermes_acp.setup_wizard import run_setup

        sys.exit(run_setup(print, input))
    if args.verbose:
        os.environ["HERMES_ACP_VERBOSE"] = "1"
    if args.shared or _configured_shared(os.environ):
        _front_door()
    _serve()


def _exec(argv: Sequence[str]) -> None:
    """``hermes-acp exec``: one prompt to its answer, through the server in this process (``headless``). Its client
    imports much of the server's core, so the collector is off from here, as in ``_serve`` (``load_app`` turns it
    back on)."""
    gc.disable()
    _leave_out_unused()
    from hermes_acp.headless.run import main as exec_main

    sys.exit(exec_main(argv, load_app))


def _front_door() -> None:
    from hermes_acp.transports.frontdoor import run_front_door

    sys.exit(run_front_door())


def _host(argv: Sequence[str]) -> int:
    """``hermes-acp host`` serves (``--detached``: started by a front door); ``host status`` / ``host stop`` ask the
    running host; ``host token [--rotate]`` shows or replaces the remote doors' token. ``host`` is no ACP server:
    stdout is its user's (where it listens, each remote door's URL, the token file)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="hermes-acp host",
        description="The session host: one long-lived process per $HERMES_ACP_HOME that editors attach to.",
    )
    parser.add_argument(
        "command",
        nargs="?",
        choices=["status", "stop", "token"],
        help="ask the running host (status, stop), or show the remote doors' token (token)",
    )
    parser.add_argument(
        "--rotate", action="store_true", help="with token: replace it; a running host then refuses the old one"
    )
    parser.add_argument("--detached", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--verbose", action="store_true", help="log everything to stderr too")
    args = parser.parse_args(argv)
    if args.rotate and args.command != "token":
        parser.error("--rotate goes with `token`")
    from hermes_acp.platform.system import shared_mode_problem

    unsupported = shared_mode_problem()
    if unsupported is not None:
        _print_err(f"hermes-acp host: {unsupported}")
        return 2
    if args.command == "token":
        from hermes_acp.host.token import token_command

        return token_command(print, _print_err, rotate=args.rotate)
    if args.command is not None:
        from hermes_acp.transports.control import host_control

        return host_control(args.command, print, err=_print_err)
    if args.verbose:
        os.environ["HERMES_ACP_VERBOSE"] = "1"
    from hermes_acp.host.server import HostReady, run_host

    def ready(where: HostReady) -> None:
        if args.detached:
            return
        print(f"hermes-acp host listening on {where.socket}")
        if where.socket_note is not None:
            print(f"({where.socket_note})")
        for url in where.doors:
            print(f"remote door: {url}")
        for refused in where.refused:
            print(f"remote door not opened: {refused}")
        if where.token_file is not None:
            print(f"remote doors' token: {where.token_file} (`hermes-acp host token` shows it)")
        if where.idle_exit_s is not None:
            idle = "never" if where.idle_exit_s <= 0 else f"after {where.idle_exit_s:g} s with nobody attached"
            print(f"exits when idle: {idle}")
        sys.stdout.flush()

    return run_host(ready=ready)


def _sandbox_profile(argv: Sequence[str]) -> int:
    """``hermes-acp sandbox-profile --os macos|linux [--mode MODE] [--cwd DIR]``: the Seatbelt profile or the
    bubblewrap line that would wrap a command started in DIR (exec/audit.py)."""
    import argparse
    from pathlib import Path

    from hermes_acp.core.modes import MODES

    parser = argparse.ArgumentParser(
        prog="hermes-acp sandbox-profile", description="Print what would wrap a command started in a folder."
    )
    parser.add_argument("--os", choices=["macos", "linux"], required=True, dest="target")
    parser.add_argument("--mode", choices=[mode.id for mode in MODES], default="default")
    parser.add_argument("--cwd", default=".", help="the folder the command starts in (default: this one)")
    args = parser.parse_args(argv)
    cwd = Path(args.cwd).resolve()
    if not cwd.is_dir():
        parser.error(f"--cwd {args.cwd}: not a folder")
    from hermes_acp.config import load_settings
    from hermes_acp.errors import ConfigError
    from hermes_acp.exec.audit import sandbox_profile
    from hermes_acp.exec.sandbox import Sandbox

    try:
        settings = load_settings()
    except ConfigError as exc:
        _print_err(f"hermes-acp sandbox-profile: {exc}")
        return 2
    return sandbox_profile(Sandbox.from_settings(settings), args.target, args.mode, cwd, print)


def _print_err(message: str) -> None:
    print(message, file=sys.stderr)


def _configured_shared(env: os._Environ[str]) -> bool:
    """Whether ``HERMES_ACP_HOST__MODE`` or config.toml says ``[host] mode = "shared"``; the file read raw, and parsed
    only when it mentions ``[host]`` (inline start-up pays one small read)."""
    from hermes_acp.home import config_file

    from_env = env.get("HERMES_ACP_HOST__MODE", "").strip()
    if from_env:
        return from_env == "shared"  # any other value is reported by the server (config_env, the settings)

    path = config_file(env)
    try:
        with open(path, "rb") as handle:
            data = handle.read(1_000_000)
    except OSError:
        return False
    if b"[host]" not in data or b"shared" not in data:
        return False
    import tomllib

    try:
        host = tomllib.loads(data.decode("utf-8", "replace")).get("host")
    except ValueError:
        return False  # the server reports the broken file
    return isinstance(host, dict) and host.get("mode") == "shared"


def _serve() -> None:
    # Loading the server allocates hundreds of thousands of long-lived objects and no garbage worth a collection;
    # the collector's passes over them cost some 10% of start-up. ``load_app`` turns it back on.
    gc.disable()
    from hermes_acp.transports.stdio import serve_stdio

    with contextlib.suppress(KeyboardInterrupt):
        serve_stdio(load_app)
