"""The editor's MCP server entries (ACP ``mcpServers``) as typed specs: stdio, streamable HTTP or SSE.

Entries arrive as the client sent them, in ACP's shapes: stdio ``{name, command, args, env: [{name, value}]}``, http
``{type: "http", name, url, headers: [{name, value}]}``, sse ``{type: "sse", ...}``. Anything else (``acp``, a
missing command or URL, an ``unreadable_entry`` standing for an entry that is not even an object) becomes an
``UnusableSpec`` that says why, so the session can tell the user. A stdio server's environment is the allow-list
base it is given (``exec.environment``: the safe variables and ``[sandbox] pass_env``) with exactly the variables
its entry declares over it. Env values and header values may be secrets: they are registered with the log
redactor here and never logged. This module does no I/O and knows nothing about the mcp SDK.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from hermes_acp.telemetry import register_secret

__all__ = ["HttpSpec", "ServerSpec", "StdioSpec", "UnusableSpec", "parse_specs", "unreadable_entry"]

_UNREADABLE = "hermes-acp/unreadable"


@dataclass(frozen=True, slots=True)
class StdioSpec:
    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    """The whole environment the server starts with: the allow-list base, and exactly what the editor declared over
    it; no other variable of this process (keys, tokens, ``HERMES_ACP_*``) reaches the server."""


@dataclass(frozen=True, slots=True)
class HttpSpec:
    name: str
    url: str
    transport: Literal["http", "sse"]
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class UnusableSpec:
    name: str
    reason: str


ServerSpec = StdioSpec | HttpSpec | UnusableSpec


def parse_specs(raw: Sequence[Mapping[str, object]], *, base_env: Mapping[str, str]) -> list[ServerSpec]:
    """One spec per entry, in the editor's order; a stdio server's env is ``base_env`` with its declared env over."""
    return [_parse(entry, index, base_env) for index, entry in enumerate(raw)]


def unreadable_entry(name: str | None, problem: str) -> dict[str, object]:
    """The entry that stands, in its place in the list, for one the editor sent but that could not be read."""
    return {"type": _UNREADABLE, "name": name, "problem": problem}


def _parse(entry: Mapping[str, object], index: int, base_env: Mapping[str, str]) -> ServerSpec:
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        name = f"server{index + 1}"
    kind = entry.get("type", "stdio")
    if kind == "stdio":
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            return UnusableSpec(name, "a stdio server needs a command")
        args = entry.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            return UnusableSpec(name, "args must be a list of strings")
        env = _pairs(entry.get("env"))
        if env is None:
            return UnusableSpec(name, "env must be a list of {name, value}")
        for key, value in env.items():
            if _looks_secret(key):
                register_secret(value)
        return StdioSpec(name=name, command=command, args=tuple(args), env={**base_env, **env})
    if kind in ("http", "sse"):
        url = entry.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            return UnusableSpec(name, f"an {kind} server needs an http:// or https:// url")
        headers = _pairs(entry.get("headers"))
        if headers is None:
            return UnusableSpec(name, "headers must be a list of {name, value}")
        for value in headers.values():
            register_secret(value)
        return HttpSpec(name=name, url=url, transport="http" if kind == "http" else "sse", headers=headers)
    if kind == _UNREADABLE:
        return UnusableSpec(name, f"its entry cannot be read ({entry.get('problem')})")
    return UnusableSpec(name, f"MCP servers of type {kind!r} are not supported (stdio, http and sse are)")


def _pairs(value: object) -> dict[str, str] | None:
    if value is None:
        return {}
    if not isinstance(value, list):
        return None
    out: dict[str, str] = {}
    for item in value:
        if not isinstance(item, Mapping):
            return None
        key, val = item.get("name"), item.get("value")
        if not isinstance(key, str) or not isinstance(val, str):
            return None
        out[key] = val
    return out


def _looks_secret(name: str) -> bool:
    upper = name.upper()
    return any(marker in upper for marker in ("KEY", "TOKEN", "SECRET", "PASSWORD", "AUTH", "CREDENTIAL"))
