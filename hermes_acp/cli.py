"""The ``hermes-acp`` command: serve ACP on stdio (default), ``--check``, ``--version``, ``--setup``.

Serving must answer ``initialize`` fast, so this module imports almost nothing; the rest of the server is loaded in
a worker thread while the dispatcher already answers (``_load_app``). Only this module (and the interactive check
and setup) may print; in serve mode stdout belongs to the protocol.
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

    from hermes_acp.protocol.stdio import AppRunner

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="hermes-acp",
        description="An ACP agent server. Without options it serves the Agent Client Protocol on stdin/stdout.",
        epilog="Home folder: $HERMES_ACP_HOME (default ~/.hermes-acp) holds config.toml, state.db, cache/ and logs/.",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="print a readable report and exit 0 if it can serve")
    group.add_argument("--version", action="store_true", help="print the version and exit")
    group.add_argument("--setup", action="store_true", help="interactive setup of a model provider")
    parser.add_argument(
        "--verbose", action="store_true", help="log everything to stderr too (by default only warnings and errors)"
    )
    return parser


def _load_app() -> AppRunner:
    # structlog's console renderer imports rich when it is installed (mcp pulls it in); the server only writes
    # JSON, and skipping rich cuts a quarter of a second from start-up.
    sys.modules.setdefault("rich", None)  # type: ignore[arg-type]
    # httpx imports its command-line client when click is installed (mcp brings it), which imports click and
    # pygments before it finds rich missing: ~25 ms of the first turn for a client the server never runs.
    sys.modules.setdefault("click", None)  # type: ignore[arg-type]
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
        _serve()
        return
    args = _parser().parse_args(argv)
    if args.version:
        print(f"hermes-acp {__version__}")
        return
    if args.check:
        from hermes_acp.diagnostics import run_check

        sys.exit(run_check(print))
    if args.setup:
        from hermes_acp.setup_wizard import run_setup

        sys.exit(run_setup(print, input))
    if args.verbose:
        os.environ["HERMES_ACP_VERBOSE"] = "1"
    _serve()


def _serve() -> None:
    # Loading the server allocates hundreds of thousands of long-lived objects and no garbage worth a collection;
    # the collector's passes over them cost some 10% of start-up. ``_load_app`` turns it back on.
    gc.disable()
    from hermes_acp.protocol.stdio import serve_stdio

    with contextlib.suppress(KeyboardInterrupt):
        serve_stdio(_load_app)
