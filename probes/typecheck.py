"""``make typecheck``: mypy --strict for each system the package runs on (``linux``, ``darwin``, ``win32``).

Each platform is a separate mypy process with its own cache folder (they would invalidate each other's); the
processes run side by side (a cold run of the three takes about a minute one after the other, ~40 s together on two
cores), and their reports are printed in the order asked. Linux checks everything (``[tool.mypy] files``); darwin
and win32 check the package, which is what runs there (the test harness is POSIX-only for now: NOTES.md). Every
error fails the run; nothing is tolerated.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

__all__ = ["check", "main"]


@dataclass(frozen=True)
class Report:
    platform: str
    stdout: str
    stderr: str


def _command(platform: str) -> list[str]:
    cache = ".mypy_cache" if platform == "linux" else f".mypy_cache/{platform}"
    targets = [] if platform == "linux" else ["hermes_acp", "probes/typecheck.py"]
    return [sys.executable, "-m", "mypy", "--platform", platform, "--cache-dir", cache, *targets]


def check(report: Report) -> bool:
    """Print one platform's errors and notes and its count; true when it has neither an error nor a crash."""
    lines = [line for line in report.stdout.splitlines() if ": error:" in line or ": note:" in line]
    errors = [line for line in lines if ": error:" in line]
    for line in lines:
        print(line)
    if report.stderr.strip():
        print(report.stderr.strip(), file=sys.stderr)
    print(f"mypy --platform {report.platform}: {len(errors)} error(s)")
    return not errors and not report.stderr.strip()


def main(platforms: list[str]) -> int:
    running = [
        (platform, subprocess.Popen(_command(platform), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for platform in platforms or ["linux"]
    ]
    reports = [Report(platform, *process.communicate()) for platform, process in running]
    results = [check(report) for report in reports]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
