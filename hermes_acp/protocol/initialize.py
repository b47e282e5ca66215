"""The v1 answer to ``initialize``, as plain JSON, answered before the rest of the server has loaded.

``handshake.Handshake`` (the route) chooses the connection's version and answers a v1 client with this; what the
client advertised decides notices, compaction updates, the editor's file system and terminals, and the ``ask_user``
tool. The shapes follow the official ACP schema (``@agentclientprotocol/sdk`` 2.4.0); capabilities are objects,
never booleans, where the schema says so (JetBrains rejects booleans).

The top-level ``_meta.steering.supported`` tells clients built for claude-agent-acp and codex-acp that
``_session/steering`` is answered here too.

Authentication methods: ``hermes-setup-form`` (first, only for clients that advertise ``elicitation.form``) sets a
provider up inside the editor through forms (``onboarding.flow``, run by ``authenticate``); ``hermes-setup`` runs
``hermes-acp --setup`` in a terminal (``type: terminal`` for clients
that advertise ``auth.terminal``; otherwise the default agent type with the legacy ``_meta["terminal-auth"]``,
naming the running executable by absolute path, since an editor that launched us by path may not find a bare
``hermes-acp``), and ``hermes-env`` says which environment variables enable which provider. This module reads the
environment and the raw config file only for that; it never fails: a broken config is reported later, in session
requests and by ``--check``. It imports neither pydantic nor the rest of the server. ``agentCapabilities.providers``
says that ``providers/list``, ``providers/set`` and ``providers/disable`` (unstable) are answered.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from hermes_acp.home import config_file
from hermes_acp.version import DISTRIBUTION, __version__

__all__ = [
    "ENV_METHOD_ID",
    "FORM_SETUP_METHOD_ID",
    "SETUP_METHOD_ID",
    "auth_methods",
    "initialize_result",
    "key_variables",
]

SETUP_METHOD_ID = "hermes-setup"
FORM_SETUP_METHOD_ID = "hermes-setup-form"
ENV_METHOD_ID = "hermes-env"
MAX_CONFIG_CHARS = 1_000_000
"""More of config.toml than ``initialize`` reads for the key variables (a larger file is not read for them here)."""


def initialize_result(params: Mapping[str, Any], env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The v1 answer (the connection speaks v1 whatever a v1 client asked for: ``v2.version.negotiate``)."""
    env = os.environ if env is None else env
    capabilities = params.get("clientCapabilities")
    auth = capabilities.get("auth") if isinstance(capabilities, dict) else None
    terminal_auth = isinstance(auth, dict) and auth.get("terminal") is True
    elicitation = capabilities.get("elicitation") if isinstance(capabilities, dict) else None
    forms = isinstance(elicitation, dict) and isinstance(elicitation.get("form"), dict)
    return {
        "protocolVersion": 1,
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
                "status": {},
                "title": {},
                "archive": {},
                "systemPrompt": {"mode": {"override": {}}},
            },
            "auth": {"logout": {}},
            "providers": {},
        },
        "authMethods": auth_methods(env, terminal_auth=terminal_auth, forms=forms),
        # ``_session/steering`` (the extension claude-agent-acp and codex-acp answer), advertised where they do.
        "_meta": {"steering": {"supported": True}},
    }


def auth_methods(env: Mapping[str, str], *, terminal_auth: bool, forms: bool = False) -> list[dict[str, Any]]:
    """The in-editor setup (clients with forms), the terminal setup method, and the environment method whose
    description names each provider's variable."""
    setup: dict[str, Any] = {
        "id": SETUP_METHOD_ID,
        "name": "Set up Hermes ACP",
        "description": "Choose a model provider and store its settings (runs `hermes-acp --setup` in a terminal).",
    }
    if terminal_auth:
        setup.update(type="terminal", args=["--setup"])
    else:
        command, args = _setup_command()
        setup["_meta"] = {"terminal-auth": {"label": "Set up Hermes ACP", "command": command, "args": args}}
    variables = key_variables(env)
    named = "; ".join(f"{variable} for {provider}" for provider, variable in sorted(variables.items()))
    from_env = {
        "id": ENV_METHOD_ID,
        "name": "API key in the environment",
        "description": f"Set a provider's key in the agent's environment, then restart the agent: {named}.",
    }
    in_editor: list[dict[str, Any]] = []
    if forms:
        in_editor.append(
            {
                "id": FORM_SETUP_METHOD_ID,
                "name": "Set up Hermes ACP",
                "description": "Choose a model service and model in a form here; a test request checks it before "
                "anything is saved. Keys stay in the environment (you name the variable, never type the key).",
            }
        )
        setup["name"] = "Set up Hermes ACP in a terminal"
    return [*in_editor, setup, from_env]


def _setup_command() -> tuple[str, list[str]]:
    """The running executable by absolute path, and the arguments that run the setup with it; run from a cache
    (``uvx hermes-acp-server``: uv's cache, which ``uv cache prune`` or an upgrade empties), the command that runs
    this version again through uv instead (``uvx hermes-acp-server==<version> --setup``)."""
    if _in_a_cache(sys.prefix):
        through_uv = _uv_command()
        if through_uv is not None:
            return through_uv
    launched = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if not launched or launched.endswith(".py") or launched == "-c" or os.path.basename(launched) == "__main__.py":
        return os.path.abspath(sys.executable), ["-m", "hermes_acp", "--setup"]
    if os.sep in launched:
        found: str | None = launched
    else:
        import shutil

        found = shutil.which(launched)
    return os.path.abspath(found or launched), ["--setup"]


def _in_a_cache(prefix: str) -> bool:
    """Whether the environment at ``prefix`` lies in a cache folder (one with a ``CACHEDIR.TAG`` above it, as uv's
    has): what is there may be gone tomorrow."""
    folder = os.path.abspath(prefix)
    while True:
        if os.path.isfile(os.path.join(folder, "CACHEDIR.TAG")):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


def _uv_command() -> tuple[str, list[str]] | None:
    """``uvx hermes-acp-server==<version> --setup`` (uvx by absolute path), or uv's own ``tool run``; None without
    either on PATH."""
    import shutil

    pinned = f"{DISTRIBUTION}=={__version__}"
    uvx = shutil.which("uvx")
    if uvx is not None:
        return os.path.abspath(uvx), [pinned, "--setup"]
    uv = shutil.which("uv") or os.environ.get("UV")
    return (os.path.abspath(uv), ["tool", "run", pinned, "--setup"]) if uv else None


def key_variables(env: Mapping[str, str]) -> dict[str, str]:
    """provider id → the env var holding its key, from config.toml (read raw), the quick-start variables and
    ``HERMES_ACP_PROVIDERS__<ID>__API_KEY_ENV`` (config_env's rule, read by name here)."""
    variables = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
    if env.get("HERMES_ACP_BASE_URL"):
        variables["custom"] = "HERMES_ACP_API_KEY"
    for name, value in env.items():
        parts = name.split("__")
        if len(parts) == 3 and parts[0] == "HERMES_ACP_PROVIDERS" and parts[2].upper() == "API_KEY_ENV" and value:
            variables[parts[1].lower()] = value
    path = config_file(env)
    if not os.path.isfile(path):  # as the settings read it: a FIFO or a device would block the answer
        return variables
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(MAX_CONFIG_CHARS)
    except (OSError, ValueError):
        return variables
    import tomllib  # only when there is a file to read

    try:
        raw = tomllib.loads(text)
    except ValueError:
        return variables
    providers = raw.get("providers")
    if isinstance(providers, dict):
        for provider_id, section in providers.items():
            if isinstance(section, dict) and isinstance(section.get("api_key_env"), str):
                variables[str(provider_id)] = section["api_key_env"]
    return variables
