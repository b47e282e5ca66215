"""``hermes-acp exec``'s command line: the options, the prompt (an argument, ``-f FILE`` or stdin), the policy, and the
environment the in-process server is given (``[budget]`` flags become its ``HERMES_ACP_BUDGET__*`` variables, so
they go through the same settings as every other way of setting a key).

Every problem is a ``UsageError`` whose message names the option; nothing here starts the server.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from hermes_acp.core.modes import MODES

from .policy import LEVELS, ApprovalPolicy, PolicyError

__all__ = ["BUDGET_FLAGS", "ExecOptions", "UsageError", "parse_options"]

MAX_PROMPT_BYTES = 10 * 1024 * 1024
"""A prompt larger than this (from a file or stdin) is refused: no model takes it, and reading it would not end."""
BUDGET_FLAGS: dict[str, str] = {
    "prompt_tokens": "--prompt-tokens",
    "session_tokens": "--session-tokens",
    "prompt_usd": "--prompt-usd",
    "session_usd": "--session-usd",
}
"""``[budget]`` key → its flag."""


class UsageError(ValueError):
    """The command line cannot be run as given (exit code 2)."""


@dataclass(frozen=True)
class ExecOptions:
    prompt: str
    cwd: Path
    additional: tuple[Path, ...]
    model: str | None
    mode: str | None
    session: str | None
    policy: ApprovalPolicy
    json: bool
    timeout_s: float | None
    env: dict[str, str]
    """The environment the in-process server reads its settings from."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hermes-acp exec",
        description="Run one prompt to its answer without an editor (docs/ci.md): the answer on stdout, progress on"
        " stderr, an exit code that says how it ended.",
    )
    parser.add_argument("prompt", nargs="*", help="the prompt (else -f FILE, else standard input)")
    parser.add_argument("-f", "--file", metavar="FILE", help="read the prompt from FILE ('-': standard input)")
    parser.add_argument("--cwd", metavar="DIR", help="the session's directory (default: this one)")
    parser.add_argument("--add-dir", metavar="DIR", action="append", default=[], help="another directory it may use")
    parser.add_argument("--model", metavar="PROVIDER:MODEL", help="the model (default: the configured default)")
    parser.add_argument("--mode", choices=[m.id for m in MODES], help="the session's mode (default: default)")
    parser.add_argument("--session", metavar="ID", help="continue this saved session (its id is printed)")
    parser.add_argument(
        "--approve", choices=LEVELS, help="what may run without a person: none (default), reads, edits, all"
    )
    parser.add_argument("--policy", metavar="FILE", help="a policy file (TOML): levels, kinds and command patterns")
    parser.add_argument("--json", action="store_true", help="stdout: every session/update, then the result (NDJSON)")
    parser.add_argument("--timeout", metavar="SECONDS", type=float, help="cancel the turn after this long (exit 5)")
    for key, flag in BUDGET_FLAGS.items():
        kind = float if key.endswith("_usd") else int
        parser.add_argument(flag, metavar="N", type=kind, help=f"[budget] {key} for this run")
    parser.add_argument("--config", metavar="FILE", help="read this config file instead of the home's")
    parser.add_argument("--verbose", action="store_true", help="the server's log on stderr too (by default errors)")
    return parser


def parse_options(argv: Sequence[str], environ: Mapping[str, str], stdin: IO[str] | None = None) -> ExecOptions:
    """The options of ``argv``; raises ``UsageError`` (and ``SystemExit(2)`` from argparse for a malformed line)."""
    args = _parser().parse_args(argv)
    cwd = Path(args.cwd).expanduser().resolve() if args.cwd else Path.cwd()
    if not cwd.is_dir():
        raise UsageError(f"--cwd {args.cwd}: not a folder")
    additional: list[Path] = []
    for given in args.add_dir:
        folder = Path(given).expanduser().resolve()
        if not folder.is_dir():
            raise UsageError(f"--add-dir {given}: not a folder")
        additional.append(folder)
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError(f"--timeout {args.timeout:g}: must be more than 0 seconds")
    roots = (cwd, *additional)
    if args.policy is not None and args.approve is not None:
        raise UsageError("--approve and --policy: give one (a policy file sets its level with `approve = …`)")
    try:
        policy = (
            ApprovalPolicy.load(Path(args.policy).expanduser(), roots)
            if args.policy is not None
            else ApprovalPolicy(level=args.approve or "none", roots=roots)
        )
    except PolicyError as exc:
        raise UsageError(f"--policy {exc}") from exc
    env = dict(environ)
    for key in BUDGET_FLAGS:
        value = getattr(args, key)
        if value is not None:
            env[f"HERMES_ACP_BUDGET__{key.upper()}"] = str(value)
    if args.config is not None:
        env["HERMES_ACP_CONFIG"] = str(Path(args.config).expanduser().resolve())
    if args.verbose:
        env["HERMES_ACP_VERBOSE"] = "1"
    else:  # stderr is the user's progress: the server's log there says errors only, unless asked
        env.setdefault("HERMES_ACP_LOGGING__STDERR_LEVEL", "error")
    return ExecOptions(
        prompt=_prompt(args.prompt, args.file, stdin if stdin is not None else sys.stdin),
        cwd=cwd,
        additional=tuple(additional),
        model=args.model,
        mode=args.mode,
        session=args.session,
        policy=policy,
        json=args.json,
        timeout_s=args.timeout,
        env=env,
    )


def _prompt(words: list[str], file: str | None, stdin: IO[str]) -> str:
    if words and file is not None:
        raise UsageError("the prompt: give it as an argument or with -f FILE, not both")
    if words:
        text = " ".join(words)
    elif file is not None and file != "-":
        path = Path(file).expanduser()
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_PROMPT_BYTES + 1)
        except OSError as exc:
            raise UsageError(f"-f {file}: cannot be read ({exc.strerror or exc})") from exc
        text = _decoded(data, f"-f {file}")
    else:
        if file is None and stdin.isatty():
            raise UsageError("no prompt: give it as an argument, with -f FILE, or on standard input")
        data = stdin.buffer.read(MAX_PROMPT_BYTES + 1) if hasattr(stdin, "buffer") else stdin.read().encode()
        text = _decoded(data, "standard input")
    if not text.strip():
        raise UsageError("the prompt is empty")
    return text


def _decoded(data: bytes, where: str) -> str:
    if len(data) > MAX_PROMPT_BYTES:
        raise UsageError(f"{where}: the prompt is larger than {MAX_PROMPT_BYTES // (1024 * 1024)} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
