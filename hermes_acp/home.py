"""Where hermes-acp keeps its state: ``$HERMES_ACP_HOME``, else ``~/.hermes-acp``.

A leaf module without pydantic, so the front door's ``initialize`` answer can find ``config.toml`` before the
settings model is imported. It knows the folder, not what is inside it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["config_file", "default_home"]


def default_home(env: Mapping[str, str]) -> Path:
    from pathlib import Path

    return Path(_home_folder(env))


def config_file(env: Mapping[str, str]) -> str:
    """``config.toml`` in the home, as a plain string (``initialize`` needs it before pathlib is worth loading)."""
    return os.path.join(_home_folder(env), "config.toml")


def _home_folder(env: Mapping[str, str]) -> str:
    raw = env.get("HERMES_ACP_HOME")
    return os.path.expanduser(raw) if raw else os.path.join(os.path.expanduser("~"), ".hermes-acp")
