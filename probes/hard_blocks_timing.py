"""``python -m probes.hard_blocks_timing``: how long the terminal's hard-block check takes on this machine.

Prints the median time of ``check_command`` for everyday commands, and the time of one check for each of a set of
hostile commands of about 10 kB (the shapes that make a naive checker slow: many commands, long pipelines, deep
nesting, loops inside loops, brace expansions, unbalanced text for the fallback). A check that runs longer than the
limit (``--limit-s``, default 30) is stopped and shown as such. The grammar is loaded before the first timing.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import time
from collections.abc import Callable
from types import FrameType

from hermes_acp.exec.hard_blocks import CommandCheck, check_command

__all__ = ["HOSTILE", "TYPICAL", "main"]

TYPICAL = [
    "pytest -q tests/test_x.py",
    "cd src && git status --short && git diff --stat",
    "rg -n 'TODO' src | head -20",
    'for f in *.py; do python3 -m py_compile "$f"; done',
    "npm run build 2>&1 | tail -40",
    "curl -s https://api.example.com/v1/items | jq '.items[] | .name'",
]

_SIZE = 10_000


def _repeat(unit: str, head: str = "", tail: str = "") -> str:
    return head + unit * ((_SIZE - len(head) - len(tail)) // len(unit)) + tail


def _nested(opening: str, middle: str, closing: str) -> str:
    count = (_SIZE - len(middle)) // (len(opening) + len(closing))
    return opening * count + middle + closing * count


HOSTILE: dict[str, Callable[[], str]] = {
    "10k: 1,000 commands": lambda: _repeat("echo a; ", tail="rm -rf /"),
    "10k: 1,000-stage pipeline": lambda: _repeat("cat x | ", tail="sh"),
    "10k: script in a here-document": lambda: _repeat("echo hi; ", "sh <<'EOF'\n", "\nEOF"),
    "10k: string literals in python -c": lambda: _repeat('os.system("ls -la"); ', "python3 -c '", "'"),
    "10k: unbalanced (fallback)": lambda: _repeat("a b c ; ", "echo '"),
    "10k: 1,000 nested $(…)": lambda: "echo " + _nested("$(echo ", "x", ")"),
    "10k: 500 nested subshells": lambda: _nested("(", "rm -rf /", ")"),
    "10k: loops nested in loops": lambda: _nested("for v in 1 2 3 4 5 6 7 8; do ", "rm x; ", "done; "),
    "10k: brace lists {a,b}{a,b}…": lambda: _repeat("{a,b}", "echo "),
    "10k: unclosed braces {{{…": lambda: _repeat("{", "echo "),
    "10k: fork bomb of 1,000 calls": lambda: _repeat("f | f; ", "f() { ", "}; f"),
}


class _TooSlow(Exception):
    pass


def _timed(command: str, limit_s: float) -> tuple[float, CommandCheck | str]:
    def stop(_signum: int, _frame: FrameType | None) -> None:
        raise _TooSlow

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    start = time.perf_counter()
    try:
        result: CommandCheck | str = check_command(command)
    except _TooSlow:
        result = f"stopped after {limit_s:g} s"
    except RecursionError:
        result = "RecursionError"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return time.perf_counter() - start, result


def _verdict(result: CommandCheck | str) -> str:
    if isinstance(result, str):
        return result
    if result.blocked is not None:
        return f"refused: {result.blocked}"
    if result.doubt is not None:
        return f"asked: {result.doubt}"
    return "passed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--limit-s", type=float, default=30.0, help="stop a single check after this long")
    parser.add_argument("--repeat", type=int, default=200, help="timings per everyday command")
    options = parser.parse_args(argv)
    loading, _ = _timed("true", options.limit_s)
    print(f"{'first check (loads the grammar)':40} {loading * 1000:10.1f} ms")
    for command in TYPICAL:
        times = [_timed(command, options.limit_s)[0] for _ in range(options.repeat)]
        shown = command if len(command) <= 38 else command[:37] + "…"
        print(f"{shown:40} {statistics.median(times) * 1e6:10.0f} µs  (median of {options.repeat})")
    for name, make in HOSTILE.items():
        command = make()
        elapsed, result = _timed(command, options.limit_s)
        print(f"{name:40} {elapsed * 1000:10.1f} ms  {len(command):6} chars  {_verdict(result)[:70]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
