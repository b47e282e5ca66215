"""The answer to a v2 ``initialize``, as plain JSON: what the agent is and offers, in v2's capability groups.

v2 groups the agent's capabilities (``capabilities.session``: ``prompt``, ``mcp``, ``delete``,
``additionalDirectories``, and the unstable ``fork``, ``archive``, ``status``, ``title``, ``systemPrompt``;
``capabilities.providers``). Giving ``session`` at all commits the agent to the baseline (``session/new``,
``list``, ``resume``, ``close``, ``prompt``, ``cancel``, ``update``), so there are no ``list`` / ``resume`` /
``close`` / ``loadSession`` markers; a non-empty ``authMethods`` commits it to ``auth/login`` and ``auth/logout``.
v2 has no ``sse`` MCP transport. ``auth/status`` is not advertised: we keep no auth state to report.

The authentication methods are v1's (``initialize.auth_methods``: the same methods and words) in v2's shape: a
``type`` always (``terminal`` only for a client that advertised ``auth.terminal``, which v2 makes an object) and
``methodId`` for v1's ``id``; v1's legacy ``_meta["terminal-auth"]`` has no place in v2 (a client that cannot run a
terminal method is offered the setup as an agent method). ``_meta.steering`` says ``_session/steering`` is answered,
as on v1; the remote extension (``reliable/meta.py``) goes under ``_meta.hermes.remote`` when the host has one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from hermes_acp.protocol.initialize import auth_methods as v1_auth_methods
from hermes_acp.version import __version__

from .wire import ClientCapabilities

__all__ = ["AGENT_CAPABILITIES", "auth_methods", "initialize_result"]

AGENT_CAPABILITIES: dict[str, Any] = {
    "session": {
        "prompt": {"image": {}, "embeddedContext": {}},
        "mcp": {"stdio": {}, "http": {}},
        "delete": {},
        "additionalDirectories": {},
        "fork": {},
        "archive": {},
        "status": {},
        "title": {},
        "systemPrompt": {"mode": {"override": {}}},
    },
    "providers": {},
}


def initialize_result(
    capabilities: ClientCapabilities,
    env: Mapping[str, str] | None = None,
    *,
    remote: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``initialize`` result for a v2 client that advertised ``capabilities``; ``remote`` is the host's
    ``_meta.hermes.remote`` (``reliable.meta.remote_advert``), when it has one."""
    meta: dict[str, Any] = {"steering": {"supported": True}}
    if remote is not None:
        meta["hermes"] = {"remote": remote}
    return {
        "protocolVersion": 2,
        "info": {"name": "hermes-acp", "title": "Hermes ACP", "version": __version__},
        "capabilities": AGENT_CAPABILITIES,
        "authMethods": auth_methods(
            os.environ if env is None else env,
            terminal_auth=capabilities.terminal_auth,
            forms=capabilities.elicitation_form,
        ),
        "_meta": meta,
    }


def auth_methods(env: Mapping[str, str], *, terminal_auth: bool, forms: bool) -> list[dict[str, Any]]:
    """v1's methods in v2's shape (see the module docstring)."""
    methods = []
    for method in v1_auth_methods(env, terminal_auth=terminal_auth, forms=forms):
        v2: dict[str, Any] = {"type": method.get("type", "agent"), "methodId": method["id"], "name": method["name"]}
        if "description" in method:
            v2["description"] = method["description"]
        if v2["type"] == "terminal":
            v2["args"] = method.get("args", [])
        methods.append(v2)
    return methods
