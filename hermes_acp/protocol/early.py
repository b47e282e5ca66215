"""``EarlySessions``: answer ``session/new`` while the acp SDK and the rest of the server are still loading.

An editor sends ``session/new`` right after ``initialize``; importing the SDK and the server takes most of a second
on a small machine. For a plain, valid request the front door hands it here: the session's record is created in
the store (the same way ``SessionManager.new_session`` does, through ``sessions.records``), the response is built
from ``session_view``, and ``available_commands_update`` follows it. Anything else (invalid params, an MCP entry
the SDK would skip, an unusable store) returns None and waits for the SDK path, which answers as usual. When the
server is up, ``FrontDoor.close_early`` stops early answers (after one in flight) and hands this object to the agent,
which opens the sessions ``created`` here (MCP servers included) before the first queued request is processed.

It imports neither the SDK nor the turn loop; it knows the store, the catalog and the wire shapes of one method.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.sessions.records import new_record
from hermes_acp.storage.base import SessionStore

from .mcp_entries import skipped_servers
from .session_view import available_commands, session_view

__all__ = ["EarlySession", "EarlySessions"]


@dataclass(frozen=True, slots=True)
class EarlySession:
    """A session created before the server was up: what opening it later needs."""

    session_id: str
    cwd: str
    additional: list[str] | None
    mcp_servers: list[dict[str, Any]]
    """The editor's raw ``mcpServers`` entries (validated by the SDK's models when the session is opened)."""


class EarlySessions:
    """Called by the front door only, one request at a time (under its ingress lock)."""

    def __init__(self, store: SessionStore, catalog: ModelCatalog):
        self._store = store
        self._catalog = catalog
        self.created: list[EarlySession] = []
        """The sessions answered here, in order: the agent opens them once the server is up."""

    async def answer(self, params: Any) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        """(the ``session/new`` result, the notifications to send after it), or None to leave it to the SDK."""
        fields = _plain_request(params)
        if fields is None:
            return None
        cwd, additional, servers = fields
        try:
            record = await new_record(cwd, additional, self._catalog.default_id)
            await self._store.create_session(record)
        except Exception:  # the SDK path answers it, through the error boundary
            return None
        self.created.append(EarlySession(record.id, cwd, additional, servers))
        result = {"sessionId": record.id, **session_view(record.mode_id, record.model_id, self._catalog)}
        commands = {
            "sessionId": record.id,
            "update": {"sessionUpdate": "available_commands_update", "availableCommands": available_commands()},
        }
        return result, [commands]


def _plain_request(params: Any) -> tuple[str, list[str] | None, list[dict[str, Any]]] | None:
    if not isinstance(params, dict):
        return None
    cwd, servers, additional = params.get("cwd"), params.get("mcpServers"), params.get("additionalDirectories")
    if not isinstance(cwd, str) or not isinstance(servers, list) or skipped_servers(params):
        return None
    if additional is not None and not (isinstance(additional, list) and all(isinstance(p, str) for p in additional)):
        return None
    return cwd, additional, servers
