"""The work one check may do, shared by the walks of the code it hands on: a node visited or a word expanded is a
step (5 to 10 µs). A 100 kB script takes about 40,000 steps; past ``STEPS`` the check gives up (a few hundred ms at
most) and the command is asked. Nothing here knows what a step is for."""

from __future__ import annotations

__all__ = ["STEPS", "Budget", "OutOfSteps"]

STEPS = 50_000


class OutOfSteps(Exception):
    """The budget of one check is spent."""


class Budget:
    __slots__ = ("left",)

    def __init__(self, steps: int = STEPS) -> None:
        self.left = steps

    def spend(self, steps: int = 1) -> None:
        self.left -= steps
        if self.left < 0:
            raise OutOfSteps
