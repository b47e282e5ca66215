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

import base64
import io
import random
import statistics
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from PIL import Image, ImageDraw, ImageFont

from hermes_acp.computer_use.driver import DriverClient
from hermes_acp.computer_use.results import DriverReply
from hermes_acp.providers.scripted import ScriptedProvider, text_reply
from hermes_acp.telemetry import configure_logging

from .support import Desk, catalog_model, open_desk

BUSY_WINDOW = [{"knob": "big_window", "app": "calculator", "width": 1500, "height": 950}]
AUX_CONFIG = '[auxiliary.vision]\nmodel = "aux:vl"\n'
_WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "window", "button", "total")


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


def busy_png(width: int, height: int, seed: int = 7) -> str:
    """A deterministic screenshot-like PNG (base64): text lines beside a smooth, slightly noisy panel."""
    rng = random.Random(seed)
    image = Image.new("RGB", (width, height), (246, 246, 246))
    panel_w, panel_h = width // 3, height // 2
    noise = Image.frombytes("L", (panel_w, panel_h), bytes(rng.randrange(96, 160) for _ in range(panel_w * panel_h)))
    gradient = Image.linear_gradient("L").resize((panel_w, panel_h))
    image.paste(Image.merge("RGB", (gradient, noise, Image.blend(gradient, noise, 0.5))), (width - panel_w - 10, 40))
    draw, font = ImageDraw.Draw(image), ImageFont.load_default()
    for y in range(40, height - 12, 14):
        x = 10
        while x < width - panel_w - 30:
            word = rng.choice(_WORDS)
            draw.text((x, y), word, fill=(rng.randrange(0, 90),) * 3, font=font)
            x += 7 * len(word) + 6
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def use_busy_pixels(driver: DriverClient) -> None:
    """Replace every screenshot the driver returns with a busy one of the same size (made once per size)."""
    made: dict[tuple[int, int], str] = {}
    call = driver.call

    async def busy_call(tool: str, arguments: Mapping[str, Any]) -> DriverReply:
        reply = await call(tool, arguments)
        width, height = reply.structured.get("screenshot_width"), reply.structured.get("screenshot_height")
        if reply.images and isinstance(width, int) and isinstance(height, int):
            if (width, height) not in made:
                made[width, height] = busy_png(width, height)
            reply.images = [("image/png", made[width, height])]
        return reply

    driver.call = busy_call  # type: ignore[method-assign]


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
