"""How a session is described to clients, as wire JSON: modes, config options, the legacy ``models`` block and the
slash commands.

Current Zed reads only ``configOptions`` (mode and model selects); JetBrains still reads ``models`` and sends
``session/set_model``; older clients read ``modes``. Every session response carries all three, kept in sync. The
shapes are plain JSON so the front door can answer an early ``session/new`` before the acp SDK has loaded; the SDK
path validates the same dicts into its response models, and tests check them against the SDK's schema.
"""

from __future__ import annotations

from typing import Any

from hermes_acp.core.modes import MODES
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.sessions.commands import COMMANDS

__all__ = [
    "MODEL_OPTION_ID",
    "MODE_OPTION_ID",
    "available_commands",
    "config_options",
    "session_view",
]

MODE_OPTION_ID = "mode"
MODEL_OPTION_ID = "model"


def _current_model_id(model_id: str | None, catalog: ModelCatalog) -> str | None:
    return model_id if model_id in catalog else catalog.default_id


def config_options(mode_id: str, model_id: str | None, catalog: ModelCatalog) -> list[dict[str, Any]]:
    options: list[dict[str, Any]] = [
        {
            "type": "select",
            "id": MODE_OPTION_ID,
            "name": "Mode",
            "description": "What the agent may do without asking.",
            "category": "mode",
            "currentValue": mode_id,
            "options": [{"value": m.id, "name": m.name, "description": m.description} for m in MODES],
        }
    ]
    current = _current_model_id(model_id, catalog)
    if current is not None:
        choices = []
        for m in catalog.models:
            choice: dict[str, Any] = {"value": m.id, "name": f"{m.name} ({m.provider_id})"}
            if not m.usable:
                choice["description"] = f"needs {m.api_key_env}"
            choices.append(choice)
        options.append(
            {
                "type": "select",
                "id": MODEL_OPTION_ID,
                "name": "Model",
                "description": "The model that answers in this session.",
                "category": "model",
                "currentValue": current,
                "options": choices,
            }
        )
    return options


def session_view(mode_id: str, model_id: str | None, catalog: ModelCatalog) -> dict[str, Any]:
    """The fields every session response shares: ``modes``, ``configOptions`` and (with a model) ``models``."""
    view: dict[str, Any] = {
        "modes": {
            "currentModeId": mode_id,
            "availableModes": [{"id": m.id, "name": m.name, "description": m.description} for m in MODES],
        },
        "configOptions": config_options(mode_id, model_id, catalog),
    }
    current = _current_model_id(model_id, catalog)
    if current is not None:
        view["models"] = {
            "currentModelId": current,
            "availableModels": [
                {
                    "modelId": m.id,
                    "name": m.name,
                    "description": m.provider_id + ("" if m.usable else f" (needs {m.api_key_env})"),
                }
                for m in catalog.models
            ],
        }
    return view


def available_commands() -> list[dict[str, Any]]:
    """The slash commands, for ``available_commands_update``."""
    commands = []
    for command in COMMANDS:
        entry: dict[str, Any] = {"name": command.name, "description": command.description}
        if command.hint:
            entry["input"] = {"hint": command.hint}
        commands.append(entry)
    return commands
