"""``make bench-against BASE=DIR``: rows of ``make bench`` for this checkout and another, side by side, several times.

    python -m probes.bench_against DIR [--runs N] [--only GROUP]...

runs the row groups (default: ``GOALS``, the speed and memory goals and the figures they must not cost) ``N`` times
(default 5), each time for both checkouts in turn (the order alternates between runs, so load that comes and goes
hits both alike), with this checkout's probe, fixtures and model server and the agent of each checkout
(``PYTHONPATH``: a checkout's ``hermes_acp``; a checkout made with ``git worktree add DIR main`` shares the virtual
environment). For each row it prints the median and the minimum, over the runs, of the row's own figure (each row's
figure is itself a median where it times several things), and the load average before and after: on a busy machine
the minimums are what to compare. Rows that run in this process (``checkpoints``, ``corpus_replay``) measure this
checkout only and are refused here.

It appends nothing to NOTES.md; the numbers go there by hand, with the command.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
from pathlib import Path

import anyio

from .bench import REPO, ROWS, Row, run_bench

__all__ = ["GOALS", "figure_of", "main"]

GOALS = [
    "cold_start",
    "fresh_load",
    "cancel_request",
    "cancel_latency",
    "first_chunk",
    "request_size",
    "memory",
    "session_memory",
]
IN_PROCESS = frozenset({"checkpoints", "corpus_replay"})
_NUMBER = re.compile(r"^[+-]?[\d,]*\.?\d+")


def figure_of(value: str) -> tuple[float, str] | None:
    """The leading number of a row's value and its unit (``"7.7 ms (min 7.2)"`` → ``(7.7, "ms")``)."""
    found = _NUMBER.match(value.strip())
    if found is None:
        return None
    rest = value.strip()[found.end() :].split()
    return float(found.group().replace(",", "")), rest[0] if rest else ""


def _cell(values: list[float], unit: str) -> str:
    if not values:
        return "n/a"
    return f"{statistics.median(values):.1f} {unit} (min {min(values):.1f})"


async def _compare(base: Path, groups: list[str], runs: int) -> list[tuple[str, str, str, str]]:
    figures: dict[tuple[str, Path], list[float]] = {}
    units: dict[str, str] = {}
    notes: dict[str, str] = {}
    names: list[str] = []
    for run in range(runs):
        for repo in (REPO, base) if run % 2 == 0 else (base, REPO):
            rows: list[Row] = await run_bench(groups, repo)
            for row in rows:
                if row.name not in names:
                    names.append(row.name)
                    notes[row.name] = row.note
                figure = figure_of(row.value)
                if figure is not None:
                    figures.setdefault((row.name, repo), []).append(figure[0])
                    units[row.name] = figure[1]
    return [
        (
            name,
            _cell(figures.get((name, REPO), []), units.get(name, "")),
            _cell(figures.get((name, base), []), units.get(name, "")),
            notes[name],
        )
        for name in names
    ]


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="probes.bench_against", description=__doc__.split("\n\n")[0])
    parser.add_argument("base", type=Path, help="the other checkout (e.g. a worktree of main)")
    parser.add_argument("--runs", type=int, default=5, help="times each group runs for each checkout")
    parser.add_argument("--only", action="append", choices=sorted(set(ROWS) - IN_PROCESS), help="a row group")
    args = parser.parse_args(argv)
    base = args.base.resolve()
    if not (base / "hermes_acp" / "__init__.py").is_file():
        parser.error(f"{base} is not a checkout of hermes-acp (no hermes_acp/__init__.py)")
    groups = args.only or GOALS
    before = _load()
    table = anyio.run(_compare, base, groups, args.runs)
    print(f"load average before: {before}; after: {_load()}; {args.runs} runs of each")
    width = max(len(row[0]) for row in table)
    print(f"| {'measure'.ljust(width)} | this checkout (median of runs, min) | {base.name} | note |")
    print(f"|{'-' * (width + 2)}|---|---|---|")
    for name, ours, theirs, note in table:
        print(f"| {name.ljust(width)} | {ours} | {theirs} | {note} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
