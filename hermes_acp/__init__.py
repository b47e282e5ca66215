"""hermes_acp: an ACP agent server (sessions, a streaming turn loop, editor tools, MCP, computer_use)."""

from __future__ import annotations

__all__ = ["__version__", "main"]

from .version import __version__


def main() -> None:
    """The ``hermes-acp`` command."""
    from .cli import main as cli_main

    cli_main()
