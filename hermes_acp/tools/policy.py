"""Who may do what without asking: the session modes as one pure decision function.

A read inside one of the session's readable folders (its global skills) counts as inside. ``plan`` and
``read_only`` refuse anything mutating; ``read_only`` also refuses anything outside the session's
directories, while ``plan`` asks for such reads as ``default`` does (planning may need a look elsewhere).

``decide`` looks at the mode, where the call reaches (inside the session's directories or not, sensitive paths),
whether the call must ask every time (a command without the sandbox, or one that could not be read), and the
session's remembered "always" rules, and answers allow, deny or ask. It performs no I/O and asks no one;
the approval flow in ``hermes_acp.turns`` acts on its answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hermes_acp.core import ModeId
from hermes_acp.core.modes import READ_ONLY_MODES
from hermes_acp.platform.case import fold, fold_parts

from .context import ApprovalRequest, Workspace

__all__ = ["Decision", "Verdict", "decide", "is_sensitive", "rule_key"]

Decision = Literal["allow", "deny", "ask"]
_SENSITIVE_DIRS = frozenset({".git", ".ssh", ".gnupg", ".aws"})
_PRIVATE_KEY_NAMES = frozenset({"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk"})
_PRIVATE_KEY_SUFFIXES = (".pem", ".key", ".p12", ".pfx")


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    reason: str
    rule: str
    """The key an "always" answer to this question is remembered under."""
    offer_always: bool


def is_sensitive(path: Path) -> bool:
    """``.git/``, ``.ssh/`` (and similar credential folders), ``.env*`` files and private keys; names compared
    folded on every system (``platform.case``: ``.GIT/hooks/pre-commit`` is the hook on APFS and NTFS)."""
    if any(part in _SENSITIVE_DIRS for part in fold_parts(path.parts)):
        return True
    name = fold(path.name)
    return name.startswith(".env") or name in _PRIVATE_KEY_NAMES or name.endswith(_PRIVATE_KEY_SUFFIXES)


def rule_key(request: ApprovalRequest, outside: bool) -> str:
    return f"{request.scope}@outside" if outside else request.scope


def decide(
    mode: ModeId,
    request: ApprovalRequest,
    workspace: Workspace,
    rules: Mapping[str, Literal["allow", "deny"]],
) -> Verdict:
    inside = workspace.contains if request.mutating else workspace.can_read
    outside = any(not inside(p) for p in request.paths)
    sensitive = any(is_sensitive(p) for p in request.paths)
    key = rule_key(request, outside)
    offer_always = request.always_allowed and not sensitive and not request.ask_always

    def verdict(decision: Decision, reason: str) -> Verdict:
        return Verdict(decision, reason, key, offer_always)

    if mode in READ_ONLY_MODES and request.mutating:
        if mode == "plan":
            return verdict(
                "deny",
                "the session is in plan mode: no edits, commands or desktop input; present the plan with"
                " exit_plan_mode and the user decides when to start",
            )
        return verdict("deny", "the session is in read_only mode: no edits, commands or desktop input")
    if mode == "read_only" and outside:
        return verdict("deny", "the session is in read_only mode: nothing outside the session's directories")
    remembered = rules.get(key)
    if remembered == "deny":
        return verdict("deny", f"refused earlier with 'always' for {key}")
    if sensitive:
        return verdict("ask", "the call touches a sensitive path")
    if request.ask_always:
        return verdict("ask", request.reason or f"{request.scope} asks in every mode")
    if remembered == "allow":
        return verdict("allow", f"allowed earlier with 'always' for {key}")
    if outside:
        return verdict("ask", "the call reaches outside the session's directories")
    if not request.mutating or mode == "dont_ask":
        return verdict("allow", f"allowed by mode {mode}")
    if mode == "accept_edits" and request.scope == "edit":
        return verdict("allow", "edits inside the session's directories are allowed in accept_edits")
    return verdict("ask", f"mode {mode} asks before this")
