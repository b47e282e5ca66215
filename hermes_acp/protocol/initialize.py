"""The ``initialize`` answer, built as plain JSON without importing the acp SDK.

The front door (``stdio.py``) answers ``initialize`` from here while the SDK still loads in the background, so an
editor gets its answer in milliseconds. The shapes follow the ACP schema (v1.19 as shipped in the pinned SDK);
a golden test pins them and a test validates them against the SDK's own models. Capabilities are objects, never
booleans, where the schema says so (JetBrains rejects booleans). This module reads the environment and the raw
config file only to list authentication methods; it never fails: a broken config is reported later, in session
requests and by ``--check``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from typing import Any

from hermes_acp.home import default_home
from hermes_acp.version import __version__

__all__ = ["SUPPORTED_PROTOCOL_VERSIONS", "auth_methods", "initialize_result", "negotiate_version"]

SUPPORTED_PROTOCOL_VERSIONS = (1,)
SETUP_METHOD_ID = "hermes-setup"


def negotiate_version(requested: object) -> int:
    """The highest version we support that is ≤ the client's; our lowest when the client's is older or odd."""
    if isinstance(requested, bool) or not isinstance(requested, int):
        try:
            requested = int(str(requested))
        except ValueError:
            return max(SUPPORTED_PROTOCOL_VERSIONS)
    usable = [v for v in SUPPORTED_PROTOCOL_VERSIONS if v <= requested]
    return max(usable) if usable else min(SUPPORTED_PROTOCOL_VERSIONS)


def initialize_result(params: Mapping[str, Any], env: Mapping[str, str] | None = None) -> dict[str, Any]:
    env = os.environ if env is None else env
    capabilities = params.get("clientCapabilities")
    auth = capabilities.get("auth") if isinstance(capabilities, dict) else None
    terminal_auth = isinstance(auth, dict) and auth.get("terminal") is True
    return {
        "protocolVersion": negotiate_version(params.get("protocolVersion")),
        "agentInfo": {"name": "hermes-acp", "title": "Hermes ACP", "version": __version__},
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": True},
            "sessionCapabilities": {
                "list": {},
                "resume": {},
                "close": {},
                "fork": {},
                "delete": {},
                "additionalDirectories": {},
            },
        },
        "authMethods": auth_methods(env, terminal_auth=terminal_auth),
    }


def auth_methods(env: Mapping[str, str], *, terminal_auth: bool) -> list[dict[str, Any]]:
    """The terminal setup method, plus one env-var method per provider that reads its key from a variable."""
    setup: dict[str, Any] = {
        "id": SETUP_METHOD_ID,
        "name": "Set up Hermes ACP",
        "description": "Choose a model provider and store its settings (runs `hermes-acp --setup` in a terminal).",
    }
    if terminal_auth:
        setup.update(type="terminal", args=["--setup"])
    else:
        setup["_meta"] = {"terminal-auth": {"label": "Set up Hermes ACP", "command": "hermes-acp", "args": ["--setup"]}}
    methods = [setup]
    for provider_id, variable in _key_variables(env).items():
        methods.append(
            {
                "type": "env_var",
                "id": f"env:{provider_id}",
                "name": f"{provider_id} API key",
                "description": f"Set {variable} in the agent's environment to use the {provider_id} provider.",
                "vars": [{"name": variable, "label": f"{provider_id} API key", "secret": True}],
            }
        )
    return methods


def _key_variables(env: Mapping[str, str]) -> dict[str, str]:
    """provider id → the env var holding its key, from config.toml (read raw) and the quick-start variables."""
    variables = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
    if env.get("HERMES_ACP_BASE_URL"):
        variables["custom"] = "HERMES_ACP_API_KEY"
    try:
        raw = tomllib.loads((default_home(env) / "config.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return variables
    providers = raw.get("providers")
    if isinstance(providers, dict):
        for provider_id, section in providers.items():
            if isinstance(section, dict) and isinstance(section.get("api_key_env"), str):
                variables[str(provider_id)] = section["api_key_env"]
    return variables
