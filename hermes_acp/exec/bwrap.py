"""The bubblewrap rendering of a ``SandboxPolicy``: the ``bwrap`` command line that builds the command's view.

Every command gets a new PID and IPC namespace, no capabilities, a cleared environment (only the policy's variables
and ``TMPDIR=/tmp``), a private ``/tmp``, ``/var/tmp``, ``/dev`` and ``/proc``, and dies with its parent; the
network namespace too when the policy has no network. The table in ``sandbox_policy`` says how each mount reads.
Pure: builds a list of strings.
"""

from __future__ import annotations

from collections.abc import Sequence

from .sandbox_policy import SandboxPolicy

__all__ = ["base_args", "render"]

MIB = 1024 * 1024


def base_args(*, network: bool) -> list[str]:
    args = ["--die-with-parent", "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL", "--clearenv"]
    if not network:
        args.append("--unshare-net")
    return args


def mounts(policy: SandboxPolicy) -> list[str]:
    size = ["--size", str(policy.tmp_mib * MIB)] if policy.tmp_mib else []
    args = ["--dev", "/dev", "--proc", "/proc", *size, "--tmpfs", "/tmp", "--dir", "/var"]
    args += ["--symlink", "../run", "/var/run", *size, "--tmpfs", "/var/tmp"]
    for mount in policy.view.mounts:
        match mount.kind:
            case "ro" | "frozen":
                args += ["--ro-bind", mount.source, mount.path]
            case "rw" | "pinned" | "socket":
                args += ["--bind", mount.source, mount.path]
            case "symlink":
                args += ["--symlink", mount.source, mount.path]
            case "tmpfs_home":
                args += [*size, "--tmpfs", mount.path]
            case "mask_file":
                args += ["--ro-bind", mount.source, mount.path]
            case "mask_dir":
                args += ["--tmpfs", mount.path, "--remount-ro", mount.path]
    return [*args, "--remount-ro", "/"]


def render(policy: SandboxPolicy, bwrap: str, command: Sequence[str]) -> list[str]:
    """The line that runs ``command`` (already wrapped in its per-process limits) in the policy's sandbox."""
    args = [bwrap, *base_args(network=policy.network)]
    if policy.for_editor:
        # The editor starts the line on a terminal; without a session of its own the command could push
        # keystrokes into it (TIOCSTI). Local commands start without a terminal, in one process group that the
        # runner ends as a whole, which a new session would leave.
        args.append("--new-session")
    args += mounts(policy)
    for name, value in {**policy.env, "TMPDIR": "/tmp"}.items():
        args += ["--setenv", name, value]
    return [*args, "--chdir", policy.cwd, "--", *command]
