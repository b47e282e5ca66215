"""A ``SessionManager`` on test doubles: an in-memory store, a scripted model, a client bridge that records what each
session emits and allows every permission question. For what the wire cannot show (the session layer's own
answers, its owner tasks)."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from hermes_acp.commands.command_set import Command
from hermes_acp.config import load_settings
from hermes_acp.core import SessionEvent
from hermes_acp.core.notice import Notice
from hermes_acp.providers.catalog import CatalogModel, ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.providers.scripted import ScriptedProvider
from hermes_acp.sessions import SessionManager, SessionServices, derive_tool_surface
from hermes_acp.sessions.options import SessionOptions
from hermes_acp.sessions.views import EditorLinks, Foreground
from hermes_acp.storage import InMemorySessionStore
from hermes_acp.tools.context import EditorFiles, EditorTerminals, Elicitor
from hermes_acp.turns import LiveUpdate, PermissionAnswer, PermissionQuestion
from hermes_acp.turns.ports import PermissionChoice
from tests.fakes.server import scripted_model

__all__ = ["Bridge", "RecordingSink", "client_of", "open_manager"]


@dataclass
class RecordingSink:
    events: list[SessionEvent] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)

    async def emit_event(self, event: SessionEvent, *, live: bool, seq: int | None = None) -> None:
        self.events.append(event)

    async def emit_live(self, update: LiveUpdate) -> None:
        return None

    async def notice(self, notice: Notice) -> bool:
        self.notices.append(notice)
        return True


class _AllowGate:
    async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
        return "allow_once"

    async def choose(
        self, question: PermissionQuestion, choices: Sequence[PermissionChoice], *, refusal: str
    ) -> str | None:
        return choices[0].id


@dataclass
class Bridge:
    services_: SessionServices | None = None
    """Set by ``open_manager``."""
    sinks: dict[str, RecordingSink] = field(default_factory=dict)
    commands: dict[str, list[list[str]]] = field(default_factory=dict)
    """Each session's command lists as announced, by name."""
    modes: dict[str, list[str]] = field(default_factory=dict)
    """Each session's mode as of each options change it announced."""
    states: dict[str, list[Foreground]] = field(default_factory=dict)
    """Each session's foreground states as announced."""

    connection_id: str = "test"
    present: bool = True
    subagents: bool = False

    @property
    def services(self) -> SessionServices:
        assert self.services_ is not None
        return self.services_

    async def send(self, session_id: str, update: dict[str, Any]) -> None:
        return None

    def sink(self, session_id: str) -> RecordingSink:
        return self.sinks.setdefault(session_id, RecordingSink())

    def gate(self, session_id: str) -> _AllowGate:
        return _AllowGate()

    def files(self, session_id: str) -> EditorFiles | None:
        return None

    def terminals(self, session_id: str) -> EditorTerminals | None:
        return None

    def elicitor(self, session_id: str) -> Elicitor | None:
        return None

    def links(self, session_id: str) -> EditorLinks | None:
        return None

    async def commands_changed(self, session_id: str, commands: Sequence[Command]) -> None:
        self.commands.setdefault(session_id, []).append([c.name for c in commands])

    async def config_changed(self, session_id: str, options: SessionOptions, *, mode_changed: bool) -> None:
        self.modes.setdefault(session_id, []).append(options.mode)

    async def state_changed(self, session_id: str, state: Foreground) -> None:
        self.states.setdefault(session_id, []).append(state)


_CLIENTS: weakref.WeakKeyDictionary[SessionManager, Bridge] = weakref.WeakKeyDictionary()


def client_of(manager: SessionManager) -> Bridge:
    """The one client connection ``open_manager`` gave the manager (its sessions are opened through it)."""
    return _CLIENTS[manager]


@contextlib.asynccontextmanager
async def open_manager(
    tmp_path: Path,
    provider: ScriptedProvider,
    *,
    bridge: Bridge | None = None,
    model: CatalogModel | None = None,
    warm_up: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[SessionManager]:
    """A manager attached to a task group that ends only when every owner task has ended (a leak hangs it)."""
    settings = load_settings({"HERMES_ACP_HOME": str(tmp_path / "home")})
    model = model or scripted_model()
    services = SessionServices(
        settings=settings,
        store=InMemorySessionStore(),
        catalog=ModelCatalog([model], model.id),
        providers=ProviderRegistry(settings, {}, overrides={provider.provider_id: provider}),
        tool_surface=derive_tool_surface,
    )
    bridge = bridge or Bridge()
    bridge.services_ = services
    manager = SessionManager(services) if warm_up is None else SessionManager(services, warm_up=warm_up)
    _CLIENTS[manager] = bridge
    async with anyio.create_task_group() as group:
        manager.attach(group)
        try:
            yield manager
        finally:
            with anyio.CancelScope(shield=True):
                await manager.aclose()
