"""Name the raw ``mcpServers`` entries the acp SDK will skip, so the session can tell the user about them.

The acp SDK skips list entries it cannot read (forward compatibility with server kinds a newer editor may send),
so a malformed entry would vanish without a word. For each request that opens a session the front door calls
``note_skipped_servers``: it records ``{index, name, problem}`` for every such entry in the request's ``_meta``
under ``SKIPPED_SERVERS_META`` (next to whatever ``_meta`` the editor sent), the SDK hands that key to the
handler as a keyword argument, and the agent turns each one into an MCP entry the session reports as not started.
``early.py`` answers a request early only when every entry is readable. Pure functions over JSON values: no SDK,
no sessions.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SESSION_OPENING_METHODS", "SKIPPED_SERVERS_META", "note_skipped_servers", "skipped_servers"]

SESSION_OPENING_METHODS = frozenset({"session/new", "session/load", "session/resume", "session/fork"})
SKIPPED_SERVERS_META = "hermes-acp/skippedMcpServers"
"""The ``_meta`` key (ours, not the editor's) listing the entries the SDK skips: ``[{index, name, problem}]``."""


def note_skipped_servers(message: dict[str, Any]) -> None:
    """Record the entries the SDK will skip in ``message``'s ``params._meta`` (any the editor put there go)."""
    params = message.get("params")
    if message.get("method") not in SESSION_OPENING_METHODS or not isinstance(params, dict):
        return
    meta = params.get("_meta", {})
    if not isinstance(meta, dict):
        return  # the SDK refuses the request (-32602) before any entry matters
    meta = {key: value for key, value in meta.items() if key != SKIPPED_SERVERS_META}
    skipped = skipped_servers(params)
    if skipped:
        meta[SKIPPED_SERVERS_META] = skipped
    if meta or "_meta" in params:
        params["_meta"] = meta


def skipped_servers(params: Any) -> list[dict[str, Any]]:
    """``{index, name, problem}`` for each ``mcpServers`` entry the SDK will skip (name None when it has none)."""
    servers = params.get("mcpServers") if isinstance(params, dict) else None
    if not isinstance(servers, list):
        return []
    skipped: list[dict[str, Any]] = []
    for index, server in enumerate(servers):
        problem = _server_problem(server)
        if problem is not None:
            name = server.get("name") if isinstance(server, dict) else None
            skipped.append({"index": index, "name": name if isinstance(name, str) else None, "problem": problem})
    return skipped


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
    if kind == "acp":
        return None if isinstance(server.get("serverId"), str) else "an acp server needs a string 'serverId'"
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
