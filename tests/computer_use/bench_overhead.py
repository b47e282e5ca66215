"""Benchmark (not a test): computer_use's own time per action over the driver's, against the simulated driver.

    .venv/bin/python -m tests.computer_use.bench_overhead [ROUNDS]

For each action kind it prints the median and p90 of the tool's total time, the time spent waiting for the
driver's answers, and the difference (our overhead: argument mapping, verdicts, image work, cache files).
The "busy" rows capture a 1500x950 window (delivered at 1346x852) whose screenshot is replaced by a busy one
(lines of text and a photo-like panel, about 740 KB of PNG): the simulator paints flat colours that compress
far below the image budget, so only these rows show what fitting a real screenshot costs, natively and on the
auxiliary-vision route.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from hermes_acp.providers.scripted import ScriptedProvider, text_reply
from hermes_acp.telemetry import configure_logging

from .support import BUSY_WINDOW, Desk, catalog_model, open_desk, use_busy_pixels

AUX_CONFIG = '[auxiliary.vision]\nmodel = "aux:vl"\n'


def _row(name: str, samples: list[dict[str, float]]) -> str:
    totals = sorted(s["total_ms"] for s in samples)
    drivers = sorted(s["driver_ms"] for s in samples)
    overhead = sorted(s["total_ms"] - s["driver_ms"] for s in samples)

    def p90(values: list[float]) -> float:
        return values[min(len(values) - 1, int(len(values) * 0.9))]

    return (
        f"{name:<24} n={len(samples):<4} total {statistics.median(totals):7.2f} ms (p90 {p90(totals):7.2f})  "
        f"driver {statistics.median(drivers):7.2f} ms  overhead {statistics.median(overhead):7.2f} ms "
        f"(p90 {p90(overhead):7.2f})"
    )


async def _measure(desk: Desk, results: dict[str, list[dict[str, float]]], name: str, **arguments: Any) -> None:
    outcome = await desk.act(**arguments)
    assert not outcome.failed, outcome.parts
    assert isinstance(outcome.raw_output, dict)
    results.setdefault(name, []).append(outcome.raw_output["meta"])


async def main(rounds: int) -> None:
    configure_logging(None, "warning")
    results: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        async with open_desk(root / "plain") as desk:
            labels = await desk.capture("Calculator")
            for _ in range(rounds):
                await _measure(desk, results, "click (element)", action="click", element=labels["1"])
                await _measure(desk, results, "click (px)", action="click", coordinate=[40, 120])
                await _measure(
                    desk, results, "verify_state", action="verify_state", expect=[{"window": {"exists": True}}]
                )
                await _measure(desk, results, "capture ax", action="capture", app="Calculator", mode="ax")
                await _measure(desk, results, "capture vision", action="capture", app="Calculator", mode="vision")
                await _measure(desk, results, "capture som", action="capture", app="Calculator", mode="som")
        async with open_desk(root / "busy", faults=BUSY_WINDOW) as desk:
            use_busy_pixels(desk.cu.driver)
            await desk.capture("Calculator")
            for _ in range(rounds):
                for mode in ("vision", "som"):
                    name = f"capture {mode} (busy)"
                    await _measure(desk, results, name, action="capture", app="Calculator", mode=mode)
        aux = ScriptedProvider([text_reply("A calculator.") for _ in range(rounds + 1)], provider_id="aux")
        async with open_desk(
            root / "aux",
            faults=BUSY_WINDOW,
            config=AUX_CONFIG,
            model=catalog_model(vision=False),
            models=[catalog_model("aux:vl")],
            providers={"aux": aux},
        ) as desk:
            use_busy_pixels(desk.cu.driver)
            await desk.capture("Calculator")
            for _ in range(rounds):
                await _measure(desk, results, "capture som (busy, aux)", action="capture", app="Calculator")
    for name, samples in results.items():
        sys.stdout.write(_row(name, samples) + "\n")


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 50)
