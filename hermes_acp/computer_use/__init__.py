"""computer_use: one model-facing tool driving desktop apps through the cua-driver MCP server (docs/computer-use.md).

Wire it with ``ComputerUse.for_session(runtime, settings, model=..., catalog=..., providers=...)``: offer
``.tool`` when ``.available``, hand ``.gate`` (the session's ``ImageGate``) to every ``ToolContext``, prompt
conversion and request building. ``check_driver(settings)`` reports the driver for ``hermes-acp --check``.
Module map: ``schema`` (what the model sees), ``tool`` (checks, approval, dispatch), ``capture`` (target binding,
screenshots, elements), ``actions`` (input → driver call), ``verdict``/``results`` (what answers mean),
``driver``/``surface`` (the MCP adapter and what the driver accepts), ``gate``/``images`` (the image gate and
Pillow), ``safety`` (hard blocks), ``target``, ``elements``, ``service`` (wiring). Screenshots and element
documents go to the one image cache (``hermes_acp.tools.image_cache``).
"""

from .gate import SessionImageGate
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
    "SessionImageGate",
    "check_driver",
    "resolve_driver",
]
