"""Model-facing names of MCP tools: ``mcp__<server>__<tool>``, safe for every provider and unique in a session.

Each part is cleaned of hidden characters (``core.sanitize``), then made ``[A-Za-z0-9_]`` (anything else becomes
``_``). A name longer than ``MAX_NAME_LENGTH``
is clamped and ends in ``_`` plus the first ``HASH_LENGTH`` hex digits of a SHA-256 of the original server and
tool names, so two long names that share a prefix stay apart. Collisions (``a.b`` and ``a-b`` both become
``a_b``; two servers with one name) are resolved deterministically: entries are ranked by their sanitised name,
then by the original names, then by server position (a server's own tool before our helper of the same name);
the first keeps the plain name, later ones get the hash suffix (and a counter if even that repeats). The same
servers and tools always give the same names. Pure functions; nothing here knows the mcp SDK.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from hermes_acp.core.sanitize import clean_text

__all__ = ["HASH_LENGTH", "MAX_NAME_LENGTH", "PREFIX", "ToolKey", "assign_names", "sanitise"]

PREFIX = "mcp"
MAX_NAME_LENGTH = 64
"""The strictest common provider limit on tool names (OpenAI, Anthropic and Gemini all accept 64)."""
HASH_LENGTH = 8
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


@dataclass(frozen=True, slots=True)
class ToolKey:
    """One tool of one server: ``server_index`` is the server's position in the session's list; ``utility`` marks
    our resource/prompt helpers (a server tool of the same name ranks first)."""

    server_index: int
    server: str
    tool: str
    utility: bool = False


def sanitise(part: str) -> str:
    return _UNSAFE.sub("_", clean_text(part)) or "_"


def _digest(key: ToolKey, salt: str = "") -> str:
    return hashlib.sha256(f"{key.server}\0{key.tool}{salt}".encode()).hexdigest()[:HASH_LENGTH]


def _clamp(name: str, key: ToolKey, *, force_hash: bool = False, salt: str = "") -> str:
    if len(name) <= MAX_NAME_LENGTH and not force_hash:
        return name
    suffix = "_" + _digest(key, salt)
    return name[: MAX_NAME_LENGTH - len(suffix)] + suffix


def base_name(key: ToolKey) -> str:
    return _clamp(f"{PREFIX}__{sanitise(key.server)}__{sanitise(key.tool)}", key)


def assign_names(keys: Sequence[ToolKey]) -> dict[ToolKey, str]:
    """A unique model-facing name for every key (see the module docstring for the rules)."""
    ranked = sorted(keys, key=lambda k: (base_name(k), k.server, k.tool, k.server_index, k.utility))
    taken: set[str] = set()
    names: dict[ToolKey, str] = {}
    for key in ranked:
        plain = f"{PREFIX}__{sanitise(key.server)}__{sanitise(key.tool)}"
        name = base_name(key)
        attempt = 0
        while name in taken:
            attempt += 1
            salt = "" if attempt == 1 else f"\0{key.server_index}\0{key.utility}\0{attempt}"
            name = _clamp(plain, key, force_hash=True, salt=salt)
        taken.add(name)
        names[key] = name
    return names
