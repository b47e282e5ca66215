"""computer_use: one model-facing tool driving desktop apps through the cua-driver MCP server (docs/computer-use.md).

Wire it with ``ComputerUse.for_session(runtime, settings, gate=...)``, handing it the session's image gate
(``hermes_acp.images``, which the session builds and also gives every ``ToolContext``, prompt conversion and
request building); offer ``.tool`` when ``.available``. ``check_driver(settings)`` reports the driver for
``hermes-acp --check``. Module map: ``schema`` (what the model sees), ``tool`` (checks, approval, dispatch),
``capture`` (target binding, screenshots, elements), ``actions`` (input → driver call), ``verdict``/``results``
(what answers mean), ``driver``/``surface`` (the MCP adapter and what the driver accepts), ``safety`` (hard
blocks), ``target``, ``elements``, ``service`` (wiring). Screenshots and element documents go to the one image
cache (``hermes_acp.images.cache``); Pillow is reached through ``hermes_acp.images.codec``.
"""

from .schema import DESCRIPTION, INPUT_SCHEMA, ComputerUseInput
from .service import ComputerUse, DriverCheck, check_driver, resolve_driver
from .tool import SCOPE_BACKGROUND, SCOPE_FOREGROUND, ComputerUseTool

__all__ = [
    "DESCRIPTION",
    "INPUT_SCHEMA",
    "SCOPE_BACKGROUND",
    "SCOPE_FOREGROUND",
    "ComputerUse",
    "ComputerUseInput",
    "ComputerUseTool",
    "DriverCheck",
    "check_driver",
    "resolve_driver",
]
