"""Where each setting came from: config.toml, the quick start's variables or a ``HERMES_ACP_<SECTION>__<KEY>``
variable, kept as an origin per key while the settings are laid together, and how a refused value is described
naming whoever set it (the file or the variable).

The quick start (docs/architecture.md §1.1): ``HERMES_ACP_BASE_URL`` + ``HERMES_ACP_MODEL`` (+ ``HERMES_ACP_API_KEY``)
define a provider ``custom``; ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` enable providers ``openai`` / ``anthropic``;
``HERMES_CUA_DRIVER_CMD`` names the driver. This module works on plain TOML tables; it knows neither the settings'
models (``config``) nor the variables' rule (``config_env``).
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hermes_acp.errors import ConfigError

__all__ = [
    "FILE",
    "TABLE",
    "describe",
    "lay",
    "leaves",
    "origin_of",
    "quick_start",
    "where",
]

OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
OPENAI_DEFAULT_MODELS = ("gpt-5.4", "gpt-5.4-mini", "gpt-4.1")
ANTHROPIC_DEFAULT_MODELS = ("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5")


FILE = "file"
"""``Settings.sources``' word for a key config.toml sets; a variable's name stands for the environment."""
TABLE = "<table>"
"""Marks, in the origins ``load_settings`` keeps, a table the environment made rather than a value it set."""


def quick_start(raw: dict[str, Any], env: Mapping[str, str], origins: dict[tuple[str, ...], str]) -> dict[str, Any]:
    """``raw`` with the quick start laid over it: the environment's providers the file does not define, the default
    model ``HERMES_ACP_MODEL`` names when the file names none, and ``HERMES_CUA_DRIVER_CMD``."""
    merged = copy.deepcopy(raw)
    in_file = raw.get("providers")
    in_file = in_file if isinstance(in_file, dict) else {}
    base_url = env.get("HERMES_ACP_BASE_URL", "").strip()
    model = env.get("HERMES_ACP_MODEL", "").strip()
    quick: dict[str, tuple[str, dict[str, Any]]] = {}
    if base_url and model:
        custom: dict[str, Any] = {"kind": "openai", "base_url": base_url, "models": [{"id": model}]}
        if env.get("HERMES_ACP_API_KEY"):
            custom["api_key_env"] = "HERMES_ACP_API_KEY"
        quick["custom"] = ("HERMES_ACP_BASE_URL", custom)
    if env.get("OPENAI_API_KEY"):
        openai_models = [{"id": m, "vision": True} for m in OPENAI_DEFAULT_MODELS]
        openai = {"kind": "openai", "base_url": OPENAI_BASE_URL, "api_key_env": "OPENAI_API_KEY"}
        quick["openai"] = ("OPENAI_API_KEY", {**openai, "models": openai_models})
    if env.get("ANTHROPIC_API_KEY"):
        anthropic_models = [{"id": m, "vision": True, "context_window": 200_000} for m in ANTHROPIC_DEFAULT_MODELS]
        anthropic = {"kind": "anthropic", "base_url": ANTHROPIC_BASE_URL, "api_key_env": "ANTHROPIC_API_KEY"}
        quick["anthropic"] = ("ANTHROPIC_API_KEY", {**anthropic, "models": anthropic_models})
    for provider_id, (variable, section) in quick.items():
        if provider_id not in in_file:
            lay(merged, ("providers", provider_id), section, variable, origins)
    file_model = raw.get("model")
    if base_url and model and not (isinstance(file_model, dict) and file_model.get("default") is not None):
        lay(merged, ("model", "default"), f"custom:{model}", "HERMES_ACP_MODEL", origins)
    override = env.get("HERMES_CUA_DRIVER_CMD", "").strip()
    if override:
        try:
            argv = shlex.split(override)
        except ValueError as exc:
            raise ConfigError(f"HERMES_CUA_DRIVER_CMD: cannot be split into a command: {exc}") from exc
        lay(merged, ("computer_use", "driver_command"), argv, "HERMES_CUA_DRIVER_CMD", origins)
    return merged


def lay(
    merged: dict[str, Any], path: tuple[str, ...], value: object, origin: str, origins: dict[tuple[str, ...], str]
) -> None:
    """Set ``path`` of ``merged`` to ``value`` (making the tables on the way) and remember who set each value of it.
    A table made on the way is remembered under ``(TABLE, *path)``: an error about a key it lacks (a provider's
    ``kind``) names who made it, but its other keys keep their defaults."""
    node = merged
    for depth, part in enumerate(path[:-1], start=1):
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
            origins.setdefault((TABLE, *path[:depth]), origin)
        node = child
    if isinstance(value, dict) and not isinstance(node.get(path[-1]), dict):
        origins.setdefault((TABLE, *path), origin)
    node[path[-1]] = value
    for known in [p for p in origins if p[: len(path)] == path]:
        del origins[known]  # a value laid over another replaces it whole (a list, the file's provider)
    laid = [found for found, _ in leaves(value, path)] if isinstance(value, dict) and value else [path]
    origins.update(dict.fromkeys(laid, origin))


def leaves(table: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every value in a TOML table with its path (a list is one value; so is an empty table)."""
    found: list[tuple[tuple[str, ...], Any]] = []
    for key, value in table.items():
        if isinstance(value, dict) and value:
            found.extend(leaves(value, (*prefix, key)))
        else:
            found.append(((*prefix, key), value))
    return found


def origin_of(path: Sequence[str], sources: Mapping[str, str]) -> str | None:
    """Who set the key at ``path`` (``Settings.sources``): ``FILE``, a variable's name, or None for its default. A
    key inside a table someone set (a provider of the quick start) is theirs."""
    for end in range(len(path), 0, -1):
        origin = sources.get(".".join(path[:end]))
        if origin is not None:
            return origin
    return None


def where(path: tuple[str, ...], origins: Mapping[tuple[str, ...], str], config_file: Path) -> str:
    """What an error about ``path`` names: the variable that set it (or made the table it is in), else the file."""
    for end in range(len(path), 0, -1):
        origin = origins.get(path[:end]) or origins.get((TABLE, *path[:end]))
        if origin is not None:
            return origin if origin != FILE else str(config_file)
    return str(config_file)


def describe(exc: ValidationError, config_file: Path, origins: Mapping[tuple[str, ...], str]) -> str:
    """One line per problem: ``<file or variable>: <dotted key>: <what is wrong>``, the file's wording for both."""
    lines = []
    for error in exc.errors():
        path = tuple(str(part) for part in error["loc"] if part not in ("function-before", "function-after"))
        key = ".".join(path)
        place = where(path, origins, config_file)
        if error["type"] == "extra_forbidden":
            lines.append(f"{place}: unknown key {key!r}")
        else:
            got = error.get("input")
            shown = f" (got {got!r})" if not isinstance(got, dict | list) and repr(got) not in error["msg"] else ""
            lines.append(f"{place}: {key}: {error['msg']}{shown}")
    return "\n".join(lines)
