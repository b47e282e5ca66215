"""Model providers behind one streaming seam; the HTTP ones are imported lazily by the registry."""

from .base import (
    ModelProvider,
    ModelStopReason,
    ProviderEvent,
    ProviderRequest,
    ResponseDone,
    RetryWait,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolSpec,
)
from .catalog import CatalogModel, Cost, ModelCatalog
from .registry import ProviderRegistry
from .scripted import ScriptedProvider, ScriptedReply, ScriptExhaustedError, text_reply, tool_reply

__all__ = [
    "CatalogModel",
    "Cost",
    "ModelCatalog",
    "ModelProvider",
    "ModelStopReason",
    "ProviderEvent",
    "ProviderRegistry",
    "ProviderRequest",
    "ResponseDone",
    "RetryWait",
    "ScriptExhaustedError",
    "ScriptedProvider",
    "ScriptedReply",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallDelta",
    "ToolSpec",
    "text_reply",
    "tool_reply",
]
