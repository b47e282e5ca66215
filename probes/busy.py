"""Run a command while other processes keep some cores busy: how the suite is checked for tests that depend on a
quiet machine (tests/README.md, "On a busy machine").

    python -m probes.busy [--cores N] [--nice K] -- COMMAND...

starts N burner processes (default: every core), each spinning on arithmetic at ``nice`` K (default 0: they compete
with the command as equals), runs COMMAND in the foreground, then stops the burners and exits with COMMAND's status.
Nothing else: it measures nothing and knows nothing of the tests.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
from multiprocessing.synchronize import Event


def _burn(stop: Event, nice: int) -> None:
    if nice and hasattr(os, "nice"):
        os.nice(nice)
    spins = 0
    while not stop.is_set():
        for _ in range(100_000):
            spins += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m probes.busy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="burner processes (default: all cores)")
    parser.add_argument("--nice", type=int, default=0, help="their niceness (default 0)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop, args.nice), daemon=True) for _ in range(args.cores)]
    for burner in burners:
        burner.start()
    try:
        return subprocess.call(command)
    finally:
        stop.set()
        for burner in burners:
            burner.join(timeout=5)
            if burner.is_alive():
                burner.kill()


if __name__ == "__main__":
    sys.exit(main())
