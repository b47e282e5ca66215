"""The environment a child process inherits: ours, without the secrets.

Withheld from every child (local commands, the editor's terminals, stdio MCP servers' base environment): each
provider's ``api_key_env`` variable, every ``HERMES_ACP_*`` variable, and any variable whose name matches
``*_API_KEY``, ``*_TOKEN``, ``*_SECRET*`` or ``*PASSWORD*`` (in any case). ``[sandbox] pass_env`` names variables
allowed back. Values are never looked at, logged or copied anywhere but into the child's environment.

Pure functions over mappings; no I/O.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Mapping
from dataclasses import dataclass

__all__ = ["SECRET_PATTERNS", "EnvPolicy", "looks_secret"]

SECRET_PATTERNS = ("*_API_KEY", "*_TOKEN", "*_SECRET*", "*PASSWORD*")
_OWN_PREFIX = "HERMES_ACP_"


def looks_secret(name: str) -> bool:
    """Whether a variable's name says it holds a secret (``OPENAI_API_KEY``, ``GH_TOKEN``, ``DB_PASSWORD`` …)."""
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in SECRET_PATTERNS)


@dataclass(frozen=True, slots=True)
class EnvPolicy:
    """Which variables children never see: ``secret_names`` (the providers' key variables) and anything that
    ``looks_secret`` or is ours, except the names in ``pass_env``."""

    secret_names: frozenset[str] = frozenset()
    pass_env: frozenset[str] = frozenset()

    @classmethod
    def of(cls, secret_names: Collection[str | None] = (), pass_env: Collection[str] = ()) -> EnvPolicy:
        return cls(frozenset(n for n in secret_names if n), frozenset(pass_env))

    def withheld(self, name: str) -> bool:
        if name in self.pass_env:
            return False
        return name in self.secret_names or name.upper().startswith(_OWN_PREFIX) or looks_secret(name)

    def filter(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` without the withheld variables."""
        return {name: value for name, value in env.items() if not self.withheld(name)}

    def withheld_names(self, env: Mapping[str, str]) -> list[str]:
        """The names in ``env`` a child must not see (sorted), for wrappers that unset them by name."""
        return sorted(name for name in env if self.withheld(name))
