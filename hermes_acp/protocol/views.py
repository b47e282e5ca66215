"""How a session is described to clients: modes, config options and the legacy ``models`` block.

Current Zed reads only ``configOptions`` (mode and model selects); JetBrains still reads ``models`` and sends
``session/set_model``; older clients read ``modes``. Every session response carries all three, kept in sync. The
SDK's response models have no ``models`` field and drop unknown ones, so the responses here are subclasses that
declare it.
"""

from __future__ import annotations

from typing import Any

from acp import schema
from pydantic import BaseModel, ConfigDict, Field

from hermes_acp.core.modes import MODES
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.sessions import Session

__all__ = [
    "MODEL_OPTION_ID",
    "MODE_OPTION_ID",
    "ForkSessionResponseWithModels",
    "LoadSessionResponseWithModels",
    "ModelInfo",
    "NewSessionResponseWithModels",
    "ResumeSessionResponseWithModels",
    "SessionModelState",
    "config_options",
    "current_model_id",
    "mode_state",
    "models_block",
    "session_fields",
]

MODE_OPTION_ID = "mode"
MODEL_OPTION_ID = "model"


class ModelInfo(BaseModel):
    """One entry of the legacy ``models`` block (removed from the schema in June 2026; JetBrains reads it)."""

    model_config = ConfigDict(populate_by_name=True)
    model_id: str = Field(alias="modelId")
    name: str
    description: str | None = None


class SessionModelState(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    current_model_id: str = Field(alias="currentModelId")
    available_models: list[ModelInfo] = Field(alias="availableModels")


class NewSessionResponseWithModels(schema.NewSessionResponse):
    models: SessionModelState | None = None


class LoadSessionResponseWithModels(schema.LoadSessionResponse):
    models: SessionModelState | None = None


class ResumeSessionResponseWithModels(schema.ResumeSessionResponse):
    models: SessionModelState | None = None


class ForkSessionResponseWithModels(schema.ForkSessionResponse):
    models: SessionModelState | None = None


def current_model_id(session: Session, catalog: ModelCatalog) -> str | None:
    model_id = session.model_id
    return model_id if model_id in catalog else catalog.default_id


def mode_state(session: Session) -> schema.SessionModeState:
    return schema.SessionModeState(
        current_mode_id=session.mode,
        available_modes=[schema.SessionMode(id=m.id, name=m.name, description=m.description) for m in MODES],
    )


def config_options(session: Session, catalog: ModelCatalog) -> list[schema.SessionConfigOptionSelect]:
    options = [
        schema.SessionConfigOptionSelect(
            type="select",
            id=MODE_OPTION_ID,
            name="Mode",
            description="What the agent may do without asking.",
            category="mode",
            current_value=session.mode,
            options=[
                schema.SessionConfigSelectOption(value=m.id, name=m.name, description=m.description) for m in MODES
            ],
        )
    ]
    current = current_model_id(session, catalog)
    if current is not None:
        options.append(
            schema.SessionConfigOptionSelect(
                type="select",
                id=MODEL_OPTION_ID,
                name="Model",
                description="The model that answers in this session.",
                category="model",
                current_value=current,
                options=[
                    schema.SessionConfigSelectOption(
                        value=m.id,
                        name=f"{m.name} ({m.provider_id})",
                        description=None if m.usable else f"needs {m.api_key_env}",
                    )
                    for m in catalog.models
                ],
            )
        )
    return options


def models_block(session: Session, catalog: ModelCatalog) -> SessionModelState | None:
    current = current_model_id(session, catalog)
    if current is None:
        return None
    return SessionModelState(
        current_model_id=current,
        available_models=[
            ModelInfo(
                model_id=m.id,
                name=m.name,
                description=m.provider_id + ("" if m.usable else f" (needs {m.api_key_env})"),
            )
            for m in catalog.models
        ],
    )


def session_fields(session: Session, catalog: ModelCatalog) -> dict[str, Any]:
    """The fields every session response shares, as keyword arguments of the response models."""
    return {
        "modes": mode_state(session),
        "config_options": config_options(session, catalog),
        "models": models_block(session, catalog),
    }
