"""``python -m probes.probe [options] -- <agent command>``: run named checks against any ACP agent.

Prints one ``✓/✗/-  name  detail`` line per check, then a JSON summary (spawn → initialize, session/new, prompt →
first chunk, turn time, frames, cancel latency, the agent's peak RSS). The agent's environment is explicit: only
PATH plus the variables given with ``--env``; its stderr goes to a file (or is inherited), never to a pipe nobody
reads. Checks skip what the agent does not advertise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

import anyio

from .agent import solid_png
from .checks import CHECKS, CheckResult, ProbeOptions

__all__ = ["main", "run_checks"]

DEFAULT_CHECKS = ["caps", "timing", "stream", "replay", "cancel", "modes", "vision", "env", "mcp", "computer"]
_MARK = {"pass": "✓", "fail": "✗", "skip": "-"}
SUMMARY_KEYS = (
    "spawn_to_initialize_ms",
    "session_new_ms",
    "prompt_to_first_chunk_ms",
    "turn_ms",
    "frames",
    "cancel_latency_ms",
    "agent_peak_rss_kib",
)


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        raise SystemExit("usage: python -m probes.probe [options] -- <agent command> [args...]")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="probes.probe", description=__doc__)
    parser.add_argument("--check", action="append", choices=sorted(CHECKS), help="a check to run (repeatable)")
    parser.add_argument("--env", action="append", default=[], help="NAME (copied) or NAME=VALUE passed to the agent")
    parser.add_argument("--cwd", type=Path, help="the session directory (default: a fresh temp dir)")
    parser.add_argument("--stderr", default="file", help="'inherit', or a file path (default: a temp file)")
    parser.add_argument("--out", type=Path, default=Path("out"), help="where screenshots are written")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per step")
    parser.add_argument("--permissions", choices=["allow", "deny", "cancel"], default="allow")
    parser.add_argument("--mcp-server", action="append", default=[], help="an ACP mcpServers entry as JSON")
    parser.add_argument("--json", type=Path, help="also write the summary to this file")
    for name in (
        "prompt",
        "long-prompt",
        "vision-prompt",
        "tool-prompt",
        "mcp-prompt",
        "computer-prompt",
        "followup-prompt",
    ):
        parser.add_argument(f"--{name}")
    return parser.parse_args(argv[:split]), argv[split + 1 :]


def _options(args: argparse.Namespace, command: list[str]) -> ProbeOptions:
    env: dict[str, str] = {}
    for item in args.env:
        name, sep, value = item.partition("=")
        if sep:
            env[name] = value
        elif name in os.environ:
            env[name] = os.environ[name]
    cwd = args.cwd or Path(tempfile.mkdtemp(prefix="probe-cwd-"))
    cwd.mkdir(parents=True, exist_ok=True)
    stderr: Path | None = None
    if args.stderr != "inherit":
        stderr = (
            Path(tempfile.mkstemp(prefix="probe-agent-", suffix=".stderr")[1])
            if args.stderr == "file"
            else Path(args.stderr)
        )
    if os.sep in command[0]:
        command = [str(Path(command[0]).absolute()), *command[1:]]
    options = ProbeOptions(
        command=command,
        env=env,
        cwd=cwd.resolve(),
        stderr=stderr,
        out_dir=args.out,
        timeout_s=args.timeout,
        permissions=args.permissions,
        image=solid_png(),
        mcp_servers=[json.loads(s) for s in args.mcp_server],
    )
    for name in (
        "prompt",
        "long_prompt",
        "vision_prompt",
        "tool_prompt",
        "mcp_prompt",
        "computer_prompt",
        "followup_prompt",
    ):
        value = getattr(args, name)
        if value:
            setattr(options, name, value)
    return options


async def run_checks(names: list[str], options: ProbeOptions) -> list[CheckResult]:
    from .checks import CheckFailed, Skip

    results = []
    for name in names:
        try:
            result = await CHECKS[name](options)
        except Skip as exc:
            result = CheckResult(name, "skip", str(exc))
        except CheckFailed as exc:
            result = CheckResult(name, "fail", str(exc))
        except TimeoutError:
            result = CheckResult(name, "fail", f"no answer from the agent within {options.timeout_s:g} s")
        except Exception as exc:  # a check must report, not crash the probe
            where = traceback.extract_tb(exc.__traceback__)[-1]
            result = CheckResult(
                name, "fail", f"{type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno})"
            )
        print(f"{_MARK[result.status]} {name:<9} {result.detail}", flush=True)
        results.append(result)
    return results


def summarise(results: list[CheckResult], options: ProbeOptions) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    for result in results:
        for key, value in result.metrics.items():
            metrics.setdefault(key, value)
    return {
        "agent": options.command,
        "checks": {r.name: r.status for r in results},
        **{key: metrics.get(key) for key in SUMMARY_KEYS},
        "details": {r.name: r.metrics for r in results if r.metrics},
        "stderr": str(options.stderr) if options.stderr else "inherited",
    }


def main(argv: list[str] | None = None) -> int:
    args, command = _parse(list(sys.argv[1:] if argv is None else argv))
    if not command:
        raise SystemExit("no agent command after --")
    options = _options(args, command)
    results = anyio.run(run_checks, args.check or DEFAULT_CHECKS, options)
    summary = summarise(results, options)
    text = json.dumps(summary, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 1 if any(r.status == "fail" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
