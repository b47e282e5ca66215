"""Session responses as the acp SDK's models, built from the plain JSON of ``session_view``.

The SDK's response models have no ``models`` field and drop unknown ones, so the responses here are subclasses
that declare it (JetBrains still reads the legacy block).
"""

from __future__ import annotations

from typing import Any

from acp import schema
from pydantic import BaseModel, ConfigDict, Field

from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.sessions import Session

from .session_view import config_options, session_view

__all__ = [
    "ForkSessionResponseWithModels",
    "LoadSessionResponseWithModels",
    "ModelInfo",
    "NewSessionResponseWithModels",
    "ResumeSessionResponseWithModels",
    "SessionModelState",
    "config_option_models",
    "view_of",
]


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


def view_of(session: Session, catalog: ModelCatalog) -> dict[str, Any]:
    """The shared fields of a session response, as wire JSON (validate it into one of the models above)."""
    return session_view(session.mode, session.model_id, catalog)


def config_option_models(session: Session, catalog: ModelCatalog) -> list[schema.SessionConfigOptionSelect]:
    return [
        schema.SessionConfigOptionSelect.model_validate(option)
        for option in config_options(session.mode, session.model_id, catalog)
    ]
