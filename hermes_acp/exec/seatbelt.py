"""The Seatbelt rendering of a ``SandboxPolicy``: the macOS profile (SBPL) and the ``sandbox-exec`` line.

The profile denies everything (``(deny default)``) and then grants what the policy grants (the table in
``sandbox_policy``): the system read-only, the session's directories and home entries by path, the command's own
folder (its ``HOME`` and ``TMPDIR``; nothing else of ``/tmp`` or ``/private/var/folders``), the devices a program
needs, and the network only when the policy has it (IP, DNS and the certificate trust daemons; never the keychain's
services). Secrets are denied by path, one rule per path the walk found (Seatbelt matches paths, not inodes, so a
hard link is denied by its own path); git's protected paths are denied for writing and their folders and the roots
for renaming (a rename would carry a path away from its rule). Unix sockets are reachable only inside the writable
grants and at the allow-listed paths.

Every path is a parameter (``-D P3=/path`` and ``(param "P3")``): nothing from the file system is ever quoted into
the profile, and the profile's text depends only on the policy's shape. Paths are rendered as the policy has them,
which ``View`` resolved (``/tmp`` is ``/private/tmp`` to Seatbelt). ``sandbox-exec`` is called by its absolute
path; the environment is cleared inside it (``/usr/bin/env -i``), as bubblewrap's ``--clearenv`` does. Pure.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from hermes_acp.platform.system import SANDBOX_EXEC

from .sandbox_policy import SandboxPolicy

__all__ = ["ENV_TOOL", "Profile", "render", "render_profile"]

ENV_TOOL = "/usr/bin/env"

_PROCESS_RULES = (
    "(allow process-exec)",
    "(allow process-fork)",
    "(allow signal (target same-sandbox))",
    "(allow process-info* (target same-sandbox))",
    "(allow ipc-posix-sem)",
    "(allow ipc-posix-shm)",
    "(allow user-preference-read)",
    "(allow sysctl-read)",
    "(allow system-socket)",
    "(allow mach-lookup"
    ' (global-name "com.apple.system.opendirectoryd.libinfo")'
    ' (global-name "com.apple.system.notification_center")'
    ' (global-name "com.apple.system.logger")'
    ' (global-name "com.apple.logd")'
    ' (global-name "com.apple.diagnosticd")'
    ' (global-name "com.apple.cfprefsd.daemon")'
    ' (global-name "com.apple.cfprefsd.agent")'
    ' (global-name "com.apple.bsd.dirhelper"))',
)
_DEVICE_RULES = (
    '(allow file-read* file-write-data file-ioctl (literal "/dev/null") (literal "/dev/zero")'
    ' (literal "/dev/dtracehelper") (literal "/dev/tty"))',
    '(allow file-read* (literal "/dev/random") (literal "/dev/urandom"))',
    '(allow file-read* file-write-data (subpath "/dev/fd"))',
    '(allow file-read-metadata (literal "/") (literal "/dev") (literal "/private") (literal "/private/var"))',
)
_TERMINAL_RULES = (
    "(allow pseudo-tty)",
    '(allow file-read* file-write* file-ioctl (literal "/dev/ptmx") (regex #"^/dev/ttys[0-9]+$"))',
)
_NETWORK_RULES = (
    '(allow network-outbound (remote ip "*:*"))',
    '(allow network-inbound (local ip "*:*"))',
    '(allow network-bind (local ip "*:*"))',
    '(allow network-outbound (literal "/private/var/run/mDNSResponder"))',
    '(allow file-read* (literal "/private/var/run/resolv.conf"))',
    "(allow mach-lookup"
    ' (global-name "com.apple.dnssd.service")'
    ' (global-name "com.apple.SystemConfiguration.DNSConfiguration")'
    ' (global-name "com.apple.SystemConfiguration.configd")'
    ' (global-name "com.apple.trustd")'
    ' (global-name "com.apple.trustd.agent")'
    ' (global-name "com.apple.ocspd"))',
)


@dataclass
class Profile:
    """The profile's text and its parameters (name → path), in the order they were named."""

    rules: list[str] = field(default_factory=list)
    params: dict[str, str] = field(default_factory=dict)
    _names: dict[str, str] = field(default_factory=dict)

    def param(self, path: str) -> str:
        """``(param "Pn")`` for ``path`` (one name per path)."""
        name = self._names.get(path)
        if name is None:
            name = self._names[path] = f"P{len(self._names)}"
            self.params[name] = path
        return f'(param "{name}")'

    def add(self, action: str, operations: str, matcher: str, paths: Sequence[str]) -> None:
        """One rule over ``paths`` (none: no rule)."""
        if paths:
            filters = " ".join(f"({matcher} {self.param(path)})" for path in dict.fromkeys(paths))
            self.rules.append(f"({action} {operations} {filters})")

    @property
    def text(self) -> str:
        return "\n".join(["(version 1)", "(deny default)", *self.rules]) + "\n"

    def defines(self) -> list[str]:
        """``sandbox-exec``'s ``-D`` options for the parameters."""
        return [part for name, path in self.params.items() for part in ("-D", f"{name}={path}")]


def _ancestors(path: str) -> list[str]:
    found = []
    parent = os.path.dirname(path)
    while parent and parent != "/":
        found.append(parent)
        parent = os.path.dirname(parent)
    return found


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def render_profile(policy: SandboxPolicy) -> Profile:
    """The profile for ``policy`` (see the module docstring)."""
    profile = Profile()
    profile.rules.extend(_PROCESS_RULES)
    profile.rules.extend(_DEVICE_RULES)
    if policy.for_editor:
        profile.rules.extend(_TERMINAL_RULES)
    by_kind: dict[str, list[str]] = {}
    for mount in policy.view.mounts:
        by_kind.setdefault(mount.kind, []).append(mount.path)
    writable = [*by_kind.get("rw", []), *([policy.scratch] if policy.scratch else [])]
    readable = by_kind.get("ro", [])
    # -- grants
    profile.add("allow", "file-read* file-map-executable", "subpath", readable)
    profile.add("allow", "file-read* file-map-executable file-write*", "subpath", writable)
    profile.add("allow", "file-read*", "literal", by_kind.get("symlink", []))
    profile.add("allow", "file-read* file-write* network-outbound", "literal", by_kind.get("socket", []))
    granted = [*readable, *writable, *by_kind.get("symlink", []), *by_kind.get("socket", [])]
    ancestors = [parent for path in granted for parent in _ancestors(path)]
    profile.add("allow", "file-read-metadata", "literal", [a for a in dict.fromkeys(ancestors) if a not in granted])
    profile.add("allow", "network-outbound network-bind", "subpath", writable)
    if policy.network:
        profile.rules.extend(_NETWORK_RULES)
    # -- denies (after the grants: the later rule wins)
    frozen, pinned = by_kind.get("frozen", []), by_kind.get("pinned", [])
    masked_files, masked_dirs = by_kind.get("mask_file", []), by_kind.get("mask_dir", [])
    profile.add("deny", "file-write*", "subpath", frozen)
    profile.add("deny", "file-read-data file-write*", "literal", masked_files)
    profile.add("deny", "file-read* file-write*", "subpath", masked_dirs)
    roots = list(policy.view.roots)
    protected = [*frozen, *pinned, *masked_files, *masked_dirs]
    carried = [
        parent
        for path in protected
        for parent in _ancestors(path)
        if any(_within(parent, root) and parent != root for root in roots)
    ]
    profile.add("deny", "file-write-unlink", "literal", [*roots, *pinned, *dict.fromkeys(carried)])
    return profile


def render(policy: SandboxPolicy, command: Sequence[str]) -> list[str]:
    """The line that runs ``command`` in the policy's sandbox (its environment cleared and set inside)."""
    profile = render_profile(policy)
    env = dict(policy.env)
    if policy.scratch is not None:
        env["HOME"] = os.path.join(policy.scratch, "home")
        env["TMPDIR"] = os.path.join(policy.scratch, "tmp") + "/"
    inner = [ENV_TOOL, "-i", *(f"{name}={value}" for name, value in env.items()), *command]
    return [SANDBOX_EXEC, *profile.defines(), "-p", profile.text, *inner]
