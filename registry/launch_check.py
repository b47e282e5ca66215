"""What the ACP Registry checks before it lists an agent, run against a command line of ours.

1. **Empty stdin**: the command started with stdin at end of file exits cleanly (status 0) within the time limit
   and writes nothing to stdout that is not a JSON-RPC frame.
2. **Handshake**: the command answers ``initialize`` (sent as the registry's own client sends it, with terminal
   auth advertised in ``_meta``) and its ``authMethods`` include one of type ``agent`` or ``terminal`` (a method
   without ``type`` counts as ``agent``; ``_meta["terminal-auth"]`` as ``terminal``).

``python -m registry.launch_check -- uvx --from dist/x.whl hermes-acp-server`` prints what it found and exits 1 on
any problem. Standard library only, so it runs before anything is installed; it knows nothing of the server.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["auth_method_types", "empty_stdin_problems", "handshake_problems"]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": 1,
        "clientInfo": {"name": "hermes-acp launch check", "version": "1.0.0"},
        "clientCapabilities": {
            "terminal": True,
            "fs": {"readTextFile": True, "writeTextFile": True},
            "_meta": {"terminal_output": True, "terminal-auth": True},
        },
    },
}


def auth_method_types(methods: Sequence[Any]) -> list[str]:
    """Each method's type as the registry reads it: ``type``, else ``_meta`` hints, else ``agent``."""
    types = []
    for method in methods:
        kind = method.get("type") if isinstance(method, dict) else None
        meta = method.get("_meta") if isinstance(method, dict) else None
        if not kind and isinstance(meta, dict):
            kind = "terminal" if "terminal-auth" in meta else ("agent" if "agent-auth" in meta else None)
        types.append(str(kind or "agent"))
    return types


def empty_stdin_problems(argv: Sequence[str], env: Mapping[str, str], *, timeout_s: float) -> list[str]:
    try:
        done = subprocess.run(
            list(argv), stdin=subprocess.DEVNULL, capture_output=True, env=dict(env), timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        return [f"with empty stdin it was still running after {timeout_s:g} s"]
    except OSError as exc:
        return [f"cannot be started: {exc}"]
    found = []
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace")[-800:]
        found.append(f"with empty stdin it exited with status {done.returncode}; stderr ends:\n{tail}")
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        if line.strip() and not _is_frame(line):
            found.append(f"with empty stdin it wrote something other than JSON-RPC to stdout: {line[:200]!r}")
    return found


def handshake_problems(argv: Sequence[str], env: Mapping[str, str], *, timeout_s: float) -> tuple[list[str], Any]:
    """The problems with the answer to ``initialize`` (and the answer, when there was one)."""
    try:
        process = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(env)
        )
    except OSError as exc:
        return [f"cannot be started: {exc}"], None
    with process:
        assert process.stdin is not None
        assert process.stdout is not None
        try:
            with contextlib.suppress(BrokenPipeError):  # a command that exits at once still has its stdout read
                process.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
                process.stdin.flush()
            line = _read_line(process.stdout.fileno(), timeout_s)
        finally:
            with contextlib.suppress(BrokenPipeError):
                process.stdin.close()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
    if line is None:
        return [f"no answer to initialize within {timeout_s:g} s"], None
    try:
        answer = json.loads(line)
    except ValueError:
        return [f"stdout carried something other than JSON-RPC: {line[:200]!r}"], None
    result = answer.get("result") if isinstance(answer, dict) else None
    if not isinstance(result, dict):
        return [f"initialize was not answered with a result: {line[:300]}"], answer
    methods = result.get("authMethods")
    if not isinstance(methods, list) or not methods:
        return ["initialize lists no authMethods"], answer
    types = auth_method_types(methods)
    if not {"agent", "terminal"} & set(types):
        return [f"no auth method of type agent or terminal (types: {types})"], answer
    return [], answer


def _is_frame(line: str) -> bool:
    try:
        frame = json.loads(line)
    except ValueError:
        return False
    return isinstance(frame, dict) and frame.get("jsonrpc") == "2.0"


def _read_line(fd: int, timeout_s: float) -> str | None:
    """One line from ``fd``, or None when none came within ``timeout_s`` (or the stream ended first)."""
    deadline = time.monotonic() + timeout_s
    data = b""
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        data += chunk
    return data.split(b"\n", 1)[0].decode("utf-8", "replace")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m registry.launch_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds for each step (a first uvx installs)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the agent's command line")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the agent's command line after --")
    found = empty_stdin_problems(command, os.environ, timeout_s=args.timeout)
    print(f"launch-check: empty stdin: {'; '.join(found) or 'exited cleanly'}")
    problems, answer = handshake_problems(command, os.environ, timeout_s=args.timeout)
    found.extend(problems)
    methods = (answer or {}).get("result", {}).get("authMethods", []) if isinstance(answer, dict) else []
    described = ", ".join(f"{m.get('id')} ({t})" for m, t in zip(methods, auth_method_types(methods), strict=True))
    print(f"launch-check: handshake: {'; '.join(problems) or 'authMethods ' + described}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
