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

``read_client`` reads what a v2 client advertised straight from the request, as the SDK's router reads a v2
``initialize``: strictly for version 2 (``info`` an object with a string ``name`` and ``version``), leniently for a
later one. It needs no pydantic, so the handshake answers before the rest of the server has loaded
(``protocol/v2/wire.py`` has the same request as a model, for the server once it has).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from hermes_acp.errors import InvalidParamsError
from hermes_acp.protocol.initialize import auth_methods as v1_auth_methods
from hermes_acp.version import __version__

__all__ = ["AGENT_CAPABILITIES", "Advertised", "auth_methods", "initialize_result", "read_client"]


class _Advertised(Protocol):
    @property
    def terminal_auth(self) -> bool: ...

    @property
    def elicitation_form(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Advertised:
    """What a v2 client advertised that the answer depends on."""

    terminal_auth: bool = False
    """``capabilities.auth.terminal`` (an object in v2): it runs terminal auth methods."""
    elicitation_form: bool = False
    """``capabilities.elicitation.form``: it shows forms."""
    elicitation_url: bool = False
    """``capabilities.elicitation.url``: it opens addresses (an MCP server's sign-in page)."""


def read_client(raw: Mapping[str, Any]) -> Advertised:
    """A v2 ``initialize`` request's client (see the module docstring); -32602 naming the field for a version-2
    request whose ``info`` or ``capabilities`` is not what v2 requires."""
    if raw.get("protocolVersion") == 2:
        info = raw.get("info")
        if info is None:
            raise InvalidParamsError("info: required (an object with the client's name and version)", field="info")
        if not isinstance(info, dict):
            raise InvalidParamsError("info: must be an object with the client's name and version", field="info")
        for key in ("name", "version"):
            if not isinstance(info.get(key), str):
                raise InvalidParamsError(f"info.{key}: required, a string", field=f"info.{key}")
        if "capabilities" in raw and not isinstance(raw["capabilities"], dict | None):
            raise InvalidParamsError("capabilities: must be an object", field="capabilities")
    capabilities = raw.get("capabilities")
    capabilities = capabilities if isinstance(capabilities, dict) else {}
    auth, elicitation = capabilities.get("auth"), capabilities.get("elicitation")
    return Advertised(
        terminal_auth=isinstance(auth, dict) and isinstance(auth.get("terminal"), dict),
        elicitation_form=isinstance(elicitation, dict) and isinstance(elicitation.get("form"), dict),
        elicitation_url=isinstance(elicitation, dict) and isinstance(elicitation.get("url"), dict),
    )


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
    capabilities: _Advertised,
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
