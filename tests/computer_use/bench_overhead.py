"""Benchmark (not a test): computer_use's own time per action over the driver's, against the simulated driver.

    .venv/bin/python -m tests.computer_use.bench_overhead [ROUNDS]

For each action kind it prints the median and p90 of the tool's total time, the time spent waiting for the
driver's answers, and the difference (our overhead: argument mapping, verdicts, image work, cache files).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from hermes_acp.telemetry import configure_logging

from .support import open_desk


def _row(name: str, samples: list[dict[str, float]]) -> str:
    totals = sorted(s["total_ms"] for s in samples)
    drivers = sorted(s["driver_ms"] for s in samples)
    overhead = sorted(s["total_ms"] - s["driver_ms"] for s in samples)

    def p90(values: list[float]) -> float:
        return values[min(len(values) - 1, int(len(values) * 0.9))]

    return (
        f"{name:<16} n={len(samples):<4} total {statistics.median(totals):7.2f} ms (p90 {p90(totals):7.2f})  "
        f"driver {statistics.median(drivers):7.2f} ms  overhead {statistics.median(overhead):7.2f} ms "
        f"(p90 {p90(overhead):7.2f})"
    )


async def main(rounds: int) -> None:
    configure_logging(None, "warning")
    results: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        async with open_desk(Path(folder)) as desk:
            labels = await desk.capture("Calculator")

            async def measure(name: str, **arguments: Any) -> None:
                outcome = await desk.act(**arguments)
                assert not outcome.failed, outcome.parts
                results.setdefault(name, []).append(outcome.raw_output["meta"])

            for _ in range(rounds):
                await measure("click (element)", action="click", element=labels["1"])
                await measure("click (px)", action="click", coordinate=[40, 120])
                await measure("verify_state", action="verify_state", expect=[{"window": {"exists": True}}])
                await measure("capture ax", action="capture", app="Calculator", mode="ax")
                await measure("capture vision", action="capture", app="Calculator", mode="vision")
                await measure("capture som", action="capture", app="Calculator", mode="som")
    for name, samples in results.items():
        sys.stdout.write(_row(name, samples) + "\n")


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 50)
