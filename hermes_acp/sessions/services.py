"""``SessionServices``: what a session runs with — the configuration, the store, the models and their providers,
the environment its commands inherit, and how its tools are derived.

A connection brings its own: the host builds one per client environment (a front door's provider keys and
``pass_env`` variables), and a session keeps the services of the connection that opened it, so connection A's
keys are never used for connection B's sessions. Inline mode has one, from the process environment. No ACP here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hermes_acp.config import Settings
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.storage.base import SessionStore
from hermes_acp.tools.base import AnyTool

if TYPE_CHECKING:
    from .tool_surface import SurfaceView

__all__ = ["SessionServices"]


@dataclass(frozen=True, slots=True)
class SessionServices:
    settings: Settings
    store: SessionStore
    catalog: ModelCatalog
    providers: ProviderRegistry
    tool_surface: Callable[[SurfaceView], Sequence[AnyTool]]
    """Derives the tool surface of a session from its state (``tool_surface.derive_tool_surface``, or a test's)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """The environment the session's child processes start from (filtered by the sandbox's policy)."""
