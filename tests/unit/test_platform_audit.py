"""The platform seam holds: no module outside ``hermes_acp/platform/`` imports an OS-only module or touches the
POSIX-only names directly (the AST of every module is read; ``getattr(module, "NAME")`` counts too), with no
exception: the transports and the session host go through the seam as well."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "hermes_acp"
OS_ONLY_MODULES = frozenset({"fcntl", "resource", "termios", "pwd", "grp", "msvcrt", "winreg", "_winapi"})
BANNED_ATTRIBUTES = {
    "os": frozenset(
        {"killpg", "getuid", "geteuid", "getpgid", "setsid", "statvfs", "uname", "fork", "setpgid", "getpgrp"}
    ),
    "socket": frozenset({"SO_PEERCRED", "LOCAL_PEERCRED", "AF_UNIX"}),
    "asyncio": frozenset({"start_unix_server", "open_unix_connection"}),
}
BANNED_KEYWORDS = frozenset({"start_new_session", "preexec_fn"})
BANNED_METHODS = frozenset({"add_signal_handler", "remove_signal_handler"})
"""The event loop's POSIX-only signal handling, on whatever object it is called."""


def _banned_attribute(module: str, name: str) -> bool:
    if module == "signal":
        return name.startswith("SIG") and name not in ("SIGNALS",)
    return name in BANNED_ATTRIBUTES.get(module, frozenset())


def offences(source: str) -> list[str]:
    """What in ``source`` goes around the seam."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] in OS_ONLY_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            root = node.module.split(".")[0]
            if root in OS_ONLY_MODULES:
                found.append(f"from {node.module} import ...")
            found += [f"from {root} import {a.name}" for a in node.names if _banned_attribute(root, a.name)]
        elif isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and _banned_attribute(node.value.id, node.attr):
                found.append(f"{node.value.id}.{node.attr}")
            elif node.attr in BANNED_METHODS:
                found.append(f".{node.attr}")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2:
                target, name = node.args[0], node.args[1]
                if (
                    isinstance(target, ast.Name)
                    and isinstance(name, ast.Constant)
                    and isinstance(name.value, str)
                    and _banned_attribute(target.id, name.value)
                ):
                    found.append(f"getattr({target.id}, {name.value!r})")
            found += [f"{k.arg}=" for k in node.keywords if k.arg in BANNED_KEYWORDS]
    return found


def test_no_module_outside_the_seam_uses_an_os_only_mechanism() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("platform/"):
            continue
        bad = offences(path.read_text(encoding="utf-8"))
        if bad:
            found[relative] = bad
    assert found == {}


def test_the_audit_sees_every_way_around_the_seam() -> None:
    source = """
import fcntl
import resource as r
from pwd import getpwuid
from signal import SIGKILL
import os, signal, socket, subprocess
os.killpg(1, signal.SIGTERM)
os.getuid()
socket.SO_PEERCRED
socket.socket(socket.AF_UNIX)
getattr(signal, "SIGHUP")
subprocess.Popen(["x"], start_new_session=True)
asyncio.get_running_loop().add_signal_handler(signal.SIGINT, print)
os.fork()
"""
    assert sorted(offences(source)) == sorted(
        [
            "import fcntl",
            "import resource",
            "from pwd import ...",
            "from signal import SIGKILL",
            "os.killpg",
            "signal.SIGTERM",
            "os.getuid",
            "socket.SO_PEERCRED",
            "socket.AF_UNIX",
            "getattr(signal, 'SIGHUP')",
            "start_new_session=",
            ".add_signal_handler",
            "signal.SIGINT",
            "os.fork",
        ]
    )
    assert offences("import os\nos.kill(1, 0)\nimport signal\nsignal.Signals(9)\n") == []
