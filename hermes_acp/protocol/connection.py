"""Serve the acp SDK connection over the front door, with ``HermesAgent`` behind it.

This is the heavy half of the server (it imports the SDK); ``stdio.py`` loads it in a worker thread while it
answers ``initialize``. The connection is message-level: the door is its ``Transport``.
"""

from __future__ import annotations

from acp.agent.connection import AgentSideConnection

from hermes_acp.errors import HermesError

from .agent import AgentParts, HermesAgent
from .stdio import FrontDoor

__all__ = ["serve_agent"]


async def serve_agent(door: FrontDoor, parts: AgentParts | None, *, startup_error: HermesError | None = None) -> None:
    """Run until the client closes its end. ``parts`` is None when the server could not start (bad config,
    unusable session store): it then answers every session request with that error, and initialize still works.
    Sessions the front door created early are opened before the first queued request is read."""
    agent = HermesAgent(parts, startup_error=startup_error)
    conn = AgentSideConnection(agent, door, listening=False, use_unstable_protocol=True)
    if door.initialize_params is not None:
        agent.client_initialized(door.initialize_params)
    door.on_initialize = agent.client_initialized
    early = await door.close_early()
    if early is not None:
        await agent.adopt(early.created)
    try:
        await conn.listen()
    finally:
        await conn.close()
