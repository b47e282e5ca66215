"""Where each effective setting came from: its default, the config file, or the environment variable that set it.

Every key of the effective ``Settings`` (a list is one key; each provider's keys under ``providers.<id>``) is paired
with its origin from ``Settings.sources`` (``config_sources.origin_of``: the file, the variable of ``config_env``'s
rule, or a quick-start variable such as ``HERMES_ACP_BASE_URL``), else ``default``. The report shows the keys that are
not at their default; ``--check --json`` has them all. This module reads settings; it changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes_acp.config import Settings
from hermes_acp.config_sources import FILE, leaves, origin_of

__all__ = ["Origin", "report_sources", "setting_origins"]

MAX_SHOWN_CHARS = 120
"""A longer value (a server's list of models) is cut in the readable report; ``--json`` has it whole."""


@dataclass(frozen=True, slots=True)
class Origin:
    key: str
    """Dotted, as in the file: ``sandbox.limits.memory_mib``, ``providers.local.base_url``."""
    value: Any
    """As JSON would carry it."""
    source: str
    """``default``, ``file`` or ``environment``."""
    variable: str | None = None
    """The environment variable that set it, when one did."""

    def as_json(self, config_file: str | None) -> dict[str, Any]:
        found: dict[str, Any] = {"key": self.key, "value": self.value, "source": self.source}
        if self.variable is not None:
            found["variable"] = self.variable
        if self.source == "file":
            found["file"] = config_file
        return found


def setting_origins(settings: Settings) -> list[Origin]:
    """Every effective key with its value and where it came from, in the settings' own order."""
    data = settings.model_dump(mode="json", exclude={"home", "config_file"})
    found: list[Origin] = []
    for path, found_value in leaves(data):
        value = _as_written(found_value)
        origin = origin_of(path, settings.sources)
        if origin is None:
            found.append(Origin(".".join(path), value, "default"))
        elif origin == FILE:
            found.append(Origin(".".join(path), value, "file"))
        else:
            found.append(Origin(".".join(path), value, "environment", origin))
    return found


def report_sources(settings: Settings, say: Callable[[str], None]) -> list[Origin]:
    """Say which keys are not at their default and who set each; the whole list, for ``--json``."""
    origins = setting_origins(settings)
    chosen = [o for o in origins if o.source != "default"]
    say("Settings (each not at its default, and where it came from):")
    for origin in chosen:
        shown = json.dumps(origin.value, ensure_ascii=False)
        if len(shown) > MAX_SHOWN_CHARS:
            shown = shown[: MAX_SHOWN_CHARS - 1] + "…"
        where = origin.variable if origin.variable else str(settings.config_file)
        say(f"  {origin.key} = {shown}  ({where})")
    say(f"  {len(origins) - len(chosen)} other keys at their defaults (`hermes-acp --check --json` lists every key)")
    return origins


def _as_written(value: Any) -> Any:
    """A list of tables (a provider's models) with each table's unset keys left out, as one would write it."""
    if not isinstance(value, list):
        return value
    return [{k: v for k, v in item.items() if v is not None} if isinstance(item, dict) else item for item in value]
