"""The ``--connect`` command line, read without argparse (the relay starts as fast as the local front door): the
door's URL, ``--token-file`` (else ``HERMES_ACP_TOKEN``), ``--cacert``, ``--verbose``; and the token itself.

A problem is a ``ValueError`` whose text names the option; ``connect.run_connect`` prints it with ``USAGE`` and exits
2. The standard library only; this module knows nothing of the link or the relay.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

__all__ = ["TOKEN_VARIABLE", "USAGE", "read_options", "read_token"]

TOKEN_VARIABLE = "HERMES_ACP_TOKEN"
"""Where the token is read from without ``--token-file``."""
USAGE = "usage: hermes-acp --connect URL [--token-file FILE] [--cacert FILE] [--verbose]"


def read_options(argv: Sequence[str]) -> dict[str, str]:
    """``--connect URL --token-file F --cacert F --verbose`` (``--name=value`` too), read without argparse."""
    options: dict[str, str] = {}
    args = list(argv)
    while args:
        arg = args.pop(0)
        name, eq, value = arg.partition("=")
        if name not in ("--connect", "--token-file", "--cacert", "--verbose"):
            raise ValueError(f"unknown option {arg!r} with --connect")
        if name == "--verbose":
            options["verbose"] = "1"
            continue
        if not eq:
            if not args:
                raise ValueError(f"{name} needs a value")
            value = args.pop(0)
        options[name.removeprefix("--")] = value
    if "connect" not in options:
        raise ValueError("--connect needs the URL of the host's door")
    return options


def read_token(path: str | None, env: Mapping[str, str]) -> str | None:
    """The bearer token: the file's first line (``--token-file``, at most 4 KiB), else the variable's value."""
    if path is None:
        return env.get(TOKEN_VARIABLE) or None
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as handle:
            token = handle.read(4096).strip()
    except OSError as exc:
        raise ValueError(f"--token-file {path}: {exc.strerror or exc}") from None
    if not token:
        raise ValueError(f"--token-file {path}: the file is empty")
    return token
