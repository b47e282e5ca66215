"""Loading what a turn needs only once a session has opened: one list of modules, one order, one function.

The turn loop with its phases, compaction, the context meter, ``computer_use`` and the built-in tools take a good
part of the server's start-up to import, and ``session/new`` needs none of them. They are what
``sessions.turn_wiring`` imports, and a session imports that module in one place (``Session.wiring``) before its
first turn, ``/compact``, ``/status`` or tool surface; the manager warms them up in a worker thread as soon as a
session opens, after the replay of a load (``warm_up_turn_modules``), so the first prompt finds them loaded.

Both paths import the same modules in the same order. That is what keeps the two threads safe: a thread that needs
a module the other one is importing waits for it while holding no other module's import lock, so the two can never
wait on each other (which Python would break by handing one of them a half-initialised module).
"""

from __future__ import annotations

import importlib

import anyio.to_thread

__all__ = ["TURN_MODULES", "load_turn_modules", "warm_up_turn_modules"]

TURN_MODULES = (
    "hermes_acp.sessions.turn_wiring",
    "hermes_acp.tools.files",
    "hermes_acp.tools.edit",
    "hermes_acp.tools.listing",
    "hermes_acp.tools.search",
    "hermes_acp.tools.terminal",
    "hermes_acp.tools.plan",
)
"""``turn_wiring`` imports the turn loop, compaction, the meter, the sandbox, ``computer_use`` and ``ask_user``;
then the built-in tools."""


def load_turn_modules() -> None:
    """Import every module a turn needs (a few dictionary lookups once they are loaded)."""
    for name in TURN_MODULES:
        importlib.import_module(name)


async def warm_up_turn_modules() -> None:
    """``load_turn_modules`` off the event loop. A cancelled caller returns at once (the thread finishes its imports
    on its own), so closing or deleting a session never waits for them."""
    await anyio.to_thread.run_sync(load_turn_modules, abandon_on_cancel=True)
