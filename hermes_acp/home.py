"""Where hermes-acp keeps its state: ``$HERMES_ACP_HOME``, else ``~/.hermes-acp``, and keeping it private; where its
config file is (``$HERMES_ACP_CONFIG``, else ``config.toml`` in the home).

A leaf module without pydantic, so the front door's ``initialize`` answer can find ``config.toml`` before the
settings model is imported. It knows the folder and which of its parts hold user content (``PRIVATE_TREES``: the
logs and the caches, whole; everything else by its own entry), not what the files mean. ``make_private`` takes the
group and other permission bits off the home, its entries and everything in those trees (files ``0600``, folders
``0700``; an owner's execute bit stays), never through a link (``hermes_acp.anchored``): the server runs it at start,
``--check`` says what it changed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["CONFIG_VARIABLE", "PRIVATE_TREES", "config_file", "default_home", "make_private", "named_config"]

CONFIG_VARIABLE = "HERMES_ACP_CONFIG"
"""Names a config file other than the home's (``hermes-acp --config FILE`` sets it for the process it runs)."""

PRIVATE_TREES = ("logs", "cache")
"""Folders of the home whose every file and folder is made private, three levels deep (``cache/images/<file>``)."""


def default_home(env: Mapping[str, str]) -> Path:
    from pathlib import Path

    return Path(_home_folder(env))


def config_file(env: Mapping[str, str]) -> str:
    """The config file: the one ``HERMES_ACP_CONFIG`` names, else ``config.toml`` in the home; a plain string
    (``initialize`` needs it before pathlib is worth loading)."""
    return named_config(env) or os.path.join(_home_folder(env), "config.toml")


def named_config(env: Mapping[str, str]) -> str | None:
    """The file ``HERMES_ACP_CONFIG`` names (``~`` expanded), if it names one."""
    raw = env.get(CONFIG_VARIABLE, "").strip()
    return os.path.expanduser(raw) if raw else None


def _home_folder(env: Mapping[str, str]) -> str:
    raw = env.get("HERMES_ACP_HOME")
    return os.path.expanduser(raw) if raw else os.path.join(os.path.expanduser("~"), ".hermes-acp")


def make_private(home: Path) -> list[tuple[Path, int]]:
    """Make the home private (see the module docstring); each path changed, with its mode before (blocking)."""
    from pathlib import Path

    from hermes_acp import anchored

    paths = [home, *(Path(p) for p in anchored.entries(home, home))]
    for tree in PRIVATE_TREES:
        paths.extend(Path(p) for p in anchored.entries(home, home / tree, depth=3))
    return [(Path(path), mode) for path, mode in anchored.tighten(home, paths)]
