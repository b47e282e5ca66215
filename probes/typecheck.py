"""``make typecheck``: mypy --strict for each system the package runs on (``linux``, ``darwin``, ``win32``).

Each platform is a separate run with its own cache folder (they would invalidate each other's). Linux checks
everything (``[tool.mypy] files``); darwin and win32 check the package, which is what runs there (the test harness
is POSIX-only for now: NOTES.md). Every error fails the run; nothing is tolerated.
"""

from __future__ import annotations

import sys

from mypy import api


def check(platform: str) -> bool:
    cache = ".mypy_cache" if platform == "linux" else f".mypy_cache/{platform}"
    targets = [] if platform == "linux" else ["hermes_acp", "probes/typecheck.py"]
    stdout, stderr, _status = api.run(["--platform", platform, "--cache-dir", cache, *targets])
    lines = [line for line in stdout.splitlines() if ": error:" in line or ": note:" in line]
    errors = [line for line in lines if ": error:" in line]
    for line in lines:
        print(line)
    if stderr.strip():
        print(stderr.strip(), file=sys.stderr)
    print(f"mypy --platform {platform}: {len(errors)} error(s)")
    return not errors and not stderr.strip()


def main(platforms: list[str]) -> int:
    results = [check(platform) for platform in platforms or ["linux"]]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
