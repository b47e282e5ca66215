"""How a session is described to clients, as wire JSON: modes, config options, the legacy ``models`` block and the
slash commands.

Current Zed reads only ``configOptions`` (mode and model selects, a ``thought_level`` select for a model with
thinking efforts, and the session's on/off switches as boolean options for a client that advertised
``session.configOptions.boolean``); JetBrains still reads ``models`` and sends ``session/set_model``; older clients
read ``modes``.
Every session response carries all three, kept in sync. The shapes are plain JSON, built from plain values; tests
check them against the official ACP schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hermes_acp.commands.command_set import Command
from hermes_acp.core import Rewound
from hermes_acp.core.modes import MODES
from hermes_acp.providers.catalog import CatalogModel, ModelCatalog
from hermes_acp.providers.effort import PROVIDER_DEFAULT, current_effort, effort_choices
from hermes_acp.sessions.switches import Switch
from hermes_acp.storage.base import SessionRecord

if TYPE_CHECKING:
    from hermes_acp.sessions.views import LiveSession

__all__ = [
    "EFFORT_OPTION_ID",
    "MODEL_OPTION_ID",
    "MODE_OPTION_ID",
    "available_commands",
    "commands_update",
    "config_options",
    "rewind_result",
    "session_meta",
    "session_view",
]

MODE_OPTION_ID = "mode"
MODEL_OPTION_ID = "model"
EFFORT_OPTION_ID = "effort"
_EFFORT_NAMES = {
    PROVIDER_DEFAULT: ("Default", "Send no effort: the provider's own default."),
    "none": ("None", "No thinking."),
    "minimal": ("Minimal", None),
    "low": ("Low", None),
    "medium": ("Medium", None),
    "high": ("High", None),
    "xhigh": ("Extra high", None),
}


def _current_model_id(model_id: str | None, catalog: ModelCatalog) -> str | None:
    return model_id if model_id in catalog else catalog.default_id


def config_options(
    mode_id: str,
    model_id: str | None,
    catalog: ModelCatalog,
    effort: str | None = None,
    switches: Sequence[tuple[Switch, bool]] = (),
) -> list[dict[str, Any]]:
    """The session's options; ``effort`` is the thinking effort chosen for the session
    (``SessionOptions.chosen_effort``), ``switches`` the on/off switches with their values (for a client that takes
    boolean options)."""
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
        effort_option = _effort_option(catalog.get(current), effort)
        if effort_option is not None:
            options.append(effort_option)
    options.extend(
        {"type": "boolean", "id": switch.id, "name": switch.name, "description": switch.description, "currentValue": on}
        for switch, on in switches
    )
    return options


def _effort_option(model: CatalogModel, chosen: str | None) -> dict[str, Any] | None:
    """The ``thought_level`` select of a model with thinking efforts; None for any other model."""
    values = effort_choices(model)
    if not values:
        return None
    choices = []
    for value in values:
        name, description = _EFFORT_NAMES.get(value, (value, None))
        choice: dict[str, Any] = {"value": value, "name": name}
        if description:
            choice["description"] = description
        choices.append(choice)
    return {
        "type": "select",
        "id": EFFORT_OPTION_ID,
        "name": "Thinking effort",
        "description": "How hard the model thinks before it answers.",
        "category": "thought_level",
        "currentValue": current_effort(model, chosen) or PROVIDER_DEFAULT,
        "options": choices,
    }


def session_view(
    mode_id: str,
    model_id: str | None,
    catalog: ModelCatalog,
    effort: str | None = None,
    switches: Sequence[tuple[Switch, bool]] = (),
) -> dict[str, Any]:
    """The fields every session response shares: ``modes``, ``configOptions`` and (with a model) ``models``."""
    view: dict[str, Any] = {
        "modes": {
            "currentModeId": mode_id,
            "availableModes": [{"id": m.id, "name": m.name, "description": m.description} for m in MODES],
        },
        "configOptions": config_options(mode_id, model_id, catalog, effort, switches),
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


def available_commands(commands: Sequence[Command]) -> list[dict[str, Any]]:
    """The slash commands, as ``available_commands_update`` lists them."""
    listed = []
    for command in commands:
        entry: dict[str, Any] = {"name": command.name, "description": command.description}
        if command.hint:
            entry["input"] = {"hint": command.hint}
        listed.append(entry)
    return listed


def commands_update(commands: Sequence[Command]) -> dict[str, Any]:
    """The ``available_commands_update`` for ``commands``."""
    return {"sessionUpdate": "available_commands_update", "availableCommands": available_commands(commands)}


QUEUE_TEXT_CHARS = 200
"""How much of a waiting prompt's text ``session_meta`` shows."""


def session_meta(record: SessionRecord, live: LiveSession | None) -> dict[str, Any]:
    """What ``session/list`` says of a session under ``_meta.hermes``: where it came from (a subagent's parent and
    call; a fork's or a rewind's provenance), and for an open one whether it works, how many connections are
    attached, and what waits in its queue."""
    meta: dict[str, Any] = {}
    provenance = record.provenance
    if provenance is not None and provenance.kind == "subagent":
        meta.update(parentSessionId=provenance.session_id, toolCallId=provenance.tool_call_id)
    elif provenance is not None:
        meta["provenance"] = provenance.as_meta()
    if live is not None:
        meta.update(status="open", running=live.queue.working, attached=len(live.audience))
        meta["queue"] = [
            {"inputId": item.input_id, "kind": item.input_kind, "text": item.text[:QUEUE_TEXT_CHARS]}
            for item in live.queue.listing()
        ]
    return meta


def rewind_result(rewound: Rewound) -> dict[str, Any]:
    """The answer to ``_session/rewind``."""
    return {
        "rewound": True,
        "movedToSessionId": rewound.moved_to,
        "restored": list(rewound.restored),
        "notRestored": [{"path": item.path, "reason": item.reason} for item in rewound.not_restored],
        "commands": list(rewound.commands),
        "messageId": rewound.message_id,
    }
