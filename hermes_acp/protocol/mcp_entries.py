"""Check the raw ``mcpServers`` entries of a session request against the shapes ACP defines.

The acp SDK skips list entries it cannot read (forward compatibility with server kinds a newer editor may send),
so a malformed entry would vanish without a word. The front door calls ``unreadable_servers`` on each request that
opens a session and logs every entry that will be skipped, naming the problem; ``early.py`` answers a request early
only when every entry is readable. Pure functions over JSON values: no SDK, no sessions.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SESSION_OPENING_METHODS", "unreadable_servers"]

SESSION_OPENING_METHODS = frozenset({"session/new", "session/load", "session/resume", "session/fork"})


def unreadable_servers(params: Any) -> list[str]:
    """One message per ``mcpServers`` entry the SDK will skip (``mcpServers[i] (name): problem``)."""
    servers = params.get("mcpServers") if isinstance(params, dict) else None
    if not isinstance(servers, list):
        return []
    problems: list[str] = []
    for index, server in enumerate(servers):
        problem = _server_problem(server)
        if problem is not None:
            name = server.get("name") if isinstance(server, dict) else None
            label = f"mcpServers[{index}]" + (f" ({name})" if isinstance(name, str) else "")
            problems.append(f"{label}: {problem}")
    return problems


def _server_problem(server: Any) -> str | None:
    if not isinstance(server, dict):
        return "not an object"
    if not isinstance(server.get("name"), str):
        return "no string 'name'"
    kind = server.get("type")
    if kind in ("http", "sse"):
        if not isinstance(server.get("url"), str):
            return f"a {kind} server needs a string 'url'"
        return _name_values_problem(server.get("headers"), "headers")
    if kind not in (None, "stdio"):
        return f"unknown server type {kind!r}"
    if not isinstance(server.get("command"), str):
        return "a stdio server needs a string 'command'"
    args = server.get("args")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return "'args' must be a list of strings"
    return _name_values_problem(server.get("env"), "env")


def _name_values_problem(entries: Any, field: str) -> str | None:
    if not isinstance(entries, list):
        return f"'{field}' must be a list"
    for entry in entries:
        if not (isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get("value"), str)):
            return f"each '{field}' entry needs string 'name' and 'value'"
    return None
