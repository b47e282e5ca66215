"""Where hermes-acp keeps its state: ``$HERMES_ACP_HOME``, else ``~/.hermes-acp``.

A leaf module without pydantic, so the front door's ``initialize`` answer can find ``config.toml`` before the
settings model is imported. It knows the folder, not what is inside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["default_home"]


def default_home(env: Mapping[str, str]) -> Path:
    raw = env.get("HERMES_ACP_HOME")
    return Path(raw).expanduser() if raw else Path.home() / ".hermes-acp"
