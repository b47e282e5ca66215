"""What to tell a user whose key variable is not set in the agent's environment: where Zed and JetBrains take the
environment they start an agent with. The key goes there (or into the shell that starts the editor), never into a
form or config.toml."""

from __future__ import annotations

__all__ = ["key_missing"]


def key_missing(variable: str, service: str) -> str:
    return (
        f"{variable} is not set in the agent's environment, so {service} cannot be asked yet; nothing was written.\n"
        f"Set it where your editor starts Hermes ACP, then restart the agent and run the setup again:\n"
        f'- Zed: in settings.json, under "agent_servers" → your Hermes ACP entry, add '
        f'"env": {{ "{variable}": "<your key>" }} (for the registry install, the entry is "hermes-acp-server" with '
        f'"type": "registry").\n'
        f'- JetBrains: in ~/.jetbrains/acp.json, under "agent_servers" → your Hermes ACP entry, add '
        f'"env": {{ "{variable}": "<your key>" }}.\n'
        f"- Or export {variable} in the shell that starts the editor."
    )
