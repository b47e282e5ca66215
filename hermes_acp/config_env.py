"""Settings from the environment: ``HERMES_ACP_<SECTION>__<KEY>`` sets ``[section] key`` of config.toml.

The rule (docs/architecture.md §1.1): a variable whose name starts with ``HERMES_ACP_`` and contains ``__`` names one
key. The parts between the ``__`` are the section, its subsections and the key, matched without regard to case:
``HERMES_ACP_AGENT__MAX_TURN_REQUESTS`` is ``[agent] max_turn_requests``, ``HERMES_ACP_SANDBOX__LIMITS__MEMORY_MIB``
is ``[sandbox.limits] memory_mib``. Under ``PROVIDERS`` the next part is a provider's id
(``HERMES_ACP_PROVIDERS__LOCAL__BASE_URL`` is ``[providers.local] base_url``); it names a provider the file (or the
quick start) has when it is that id written in capitals with every character other than a letter or digit as ``_``
(``MY_SERVER`` for ``[providers.my-server]``), and a new provider with the id in lower case otherwise.

A value is read as the file's would be: for a key that holds a list or a table, the TOML of that value
(``["~/.kube", "~/.aws"]``, ``["qwen3", { id = "qwen2.5-vl", vision = true }]``); for any other key, the text
itself, which the settings' validation converts as it converts the file's values (``true``, ``20``, ``0.5``). An
empty variable counts as unset (a CI secret that is not defined). Only keys can be set, not a whole section.

The older variables keep their meaning and do not follow the rule: they have no ``__`` (``HERMES_ACP_BASE_URL``,
``HERMES_ACP_MODEL``, ``HERMES_ACP_API_KEY``, ``HERMES_ACP_HOME``, ``HERMES_ACP_CONFIG``, ``HERMES_ACP_VERBOSE``), or
no ``HERMES_ACP_`` prefix (``HERMES_CUA_DRIVER_CMD``).

This module knows the environment and the shape of the settings (the pydantic model it is given); it reads no file
and validates no value: ``config.load_settings`` lays what it finds over the file and validates the whole.
"""

from __future__ import annotations

import difflib
import re
import tomllib
import types
import typing
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

__all__ = ["PREFIX", "SEPARATOR", "EnvProblems", "EnvValue", "env_values", "variable_for"]

PREFIX = "HERMES_ACP_"
SEPARATOR = "__"
PROVIDERS = "providers"
"""The one section whose next part is a name (a provider id), not a key."""
_ID_CHARS = re.compile(r"[^0-9A-Z]")


@dataclass(frozen=True, slots=True)
class EnvValue:
    """One key set by one variable."""

    variable: str
    path: tuple[str, ...]
    """The key, as in the file: ``("sandbox", "limits", "memory_mib")``, ``("providers", "local", "base_url")``."""
    value: object
    """The variable's text, or the value its TOML gave for a list or table key."""


class EnvProblems(ValueError):
    """Variables that follow the rule but name no key, or whose value cannot be read: one line per variable."""

    def __init__(self, lines: list[str]):
        super().__init__("\n".join(lines))
        self.lines = lines


def env_values(env: Mapping[str, str], shape: type[BaseModel], provider_ids: Collection[str]) -> list[EnvValue]:
    """Every key the environment sets (see the module docstring), in the order of the variables' names.

    ``shape`` is the model of the whole file; ``provider_ids`` the providers the file and the quick start define.
    Raises ``EnvProblems`` naming each variable that cannot be used, and each key two variables set."""
    found: list[EnvValue] = []
    problems: list[str] = []
    for variable in sorted(env):
        if not variable.startswith(PREFIX) or SEPARATOR not in variable:
            continue
        text = env[variable]
        if not text.strip():
            continue
        try:
            found.append(_read(variable, text, shape, provider_ids))
        except _Unusable as exc:
            problems.append(f"{variable}: {exc}")
    seen: dict[tuple[str, ...], str] = {}
    for value in found:
        other = seen.setdefault(value.path, value.variable)
        if other != value.variable:
            problems.append(f"{value.variable}: {other} sets {'.'.join(value.path)} too; unset one of them")
    if problems:
        raise EnvProblems(problems)
    return found


def variable_for(path: Iterable[str]) -> str:
    """The variable that sets the key at ``path`` (``("agent", "max_turn_requests")`` →
    ``HERMES_ACP_AGENT__MAX_TURN_REQUESTS``), for messages and documentation."""
    return PREFIX + SEPARATOR.join(_ID_CHARS.sub("_", part.upper()) for part in path)


class _Unusable(Exception):
    pass


def _read(variable: str, text: str, shape: type[BaseModel], provider_ids: Collection[str]) -> EnvValue:
    parts = variable[len(PREFIX) :].split(SEPARATOR)
    if any(not part for part in parts):
        raise _Unusable(f"an empty part in the name: write {PREFIX}<SECTION>{SEPARATOR}<KEY>")
    path: list[str] = []
    model: type[BaseModel] = shape
    rest = list(parts)
    while rest:
        part = rest.pop(0)
        if model is shape and part.lower() == PROVIDERS and PROVIDERS in _fields(shape):
            if not rest:
                raise _Unusable(f"names the providers, not a key: set {PREFIX}PROVIDERS__<ID>__<KEY>")
            path += [PROVIDERS, _provider_id(rest.pop(0), provider_ids)]
            model = _provider_model(shape)
            if not rest:
                example = variable_for([*path, "base_url"])
                raise _Unusable(f"names a provider, not a key: set its keys, e.g. {example}")
            continue
        fields = _fields(model)
        name = part.lower()
        if name not in fields:
            raise _Unusable(f"unknown key {'.'.join([*path, name])!r}{_suggest([*path], name, fields)}")
        path.append(name)
        annotation = fields[name]
        section = _section(annotation)
        if section is not None:
            if not rest:
                section_name = ".".join(path)
                example = variable_for([*path, next(iter(_fields(section)))])
                raise _Unusable(f"names the section [{section_name}], not a key: set its keys, e.g. {example}")
            model = section
            continue
        if rest:
            raise _Unusable(f"{'.'.join(path)} is a key, not a section (the name goes on after it)")
    value: object = _toml_value(text) if _structured(fields[path[-1]]) else text
    return EnvValue(variable, tuple(path), value)


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    return {name: info.annotation for name, info in model.model_fields.items()}


def _provider_model(shape: type[BaseModel]) -> type[BaseModel]:
    """The model of one provider: the value type of the ``providers`` table."""
    args = typing.get_args(_fields(shape)[PROVIDERS])
    model = args[1] if len(args) == 2 else None
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError("the settings' providers must be a dict[str, <model>]")
    return model


def _provider_id(part: str, known: Collection[str]) -> str:
    matches = sorted(provider_id for provider_id in known if _ID_CHARS.sub("_", provider_id.upper()) == part.upper())
    if len(matches) > 1:
        raise _Unusable(f"names more than one provider ({', '.join(matches)}): give them ids that differ in letters")
    return matches[0] if matches else part.lower()


def _section(annotation: Any) -> type[BaseModel] | None:
    """The model of a subsection (``[sandbox.limits]``), or None when the key holds a value."""
    inner = _unwrapped(annotation)
    return inner if isinstance(inner, type) and issubclass(inner, BaseModel) else None


def _structured(annotation: Any) -> bool:
    """Whether a key holds a list or a table (its value is written as TOML in a variable)."""
    inner = _unwrapped(annotation)
    if typing.get_origin(inner) in (typing.Union, types.UnionType):
        return any(_structured(arg) for arg in typing.get_args(inner) if arg is not type(None))
    return typing.get_origin(inner) in (list, tuple, set, frozenset, dict) or inner in (list, tuple, dict)


def _unwrapped(annotation: Any) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _toml_value(text: str) -> object:
    try:
        document = tomllib.loads(f"value = {text}")
    except tomllib.TOMLDecodeError:
        raise _Unusable(
            f'this key holds a list or a table: write its value as in config.toml, e.g. ["a", "b"] (got {text!r})'
        ) from None
    if set(document) != {"value"}:
        raise _Unusable("give one TOML value (a list or a table), nothing after it")
    return document["value"]


def _suggest(path: list[str], name: str, fields: Mapping[str, Any]) -> str:
    close = difflib.get_close_matches(name, list(fields), n=1, cutoff=0.6)
    return f"; did you mean {variable_for([*path, close[0]])}?" if close else ""
