"""HermesAgent is a plain acp SDK agent too: served with ``acp.run_agent`` on one end of a socketpair and
``acp.connect_to_agent`` on the other (without our front door), initialize and the session methods work."""

from __future__ import annotations

import json
from pathlib import Path

import acp
import anyio
import pytest

from hermes_acp.config import load_settings
from hermes_acp.protocol.agent import AgentParts, HermesAgent
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.providers.scripted import ScriptedProvider, text_reply
from hermes_acp.sessions import SessionManager
from hermes_acp.storage import SqliteSessionStore
from tests.fakes.acp_client import RecordingClient
from tests.fakes.server import scripted_model, socket_streams

pytestmark = pytest.mark.anyio
GOLDEN = Path(__file__).parent.parent / "golden"


async def test_run_agent_serves_hermes_agent(tmp_path: Path) -> None:
    settings = load_settings({}, home=tmp_path / "home")
    store = await SqliteSessionStore.open(settings.state_db)
    provider = ScriptedProvider([text_reply("plain SDK path")])
    model = scripted_model()
    client = RecordingClient()
    try:
        async with (
            socket_streams() as (agent_reader, agent_writer, client_reader, client_writer),
            anyio.create_task_group() as tg,
        ):

            def attach(manager: SessionManager) -> None:
                manager.attach(tg)

            parts = AgentParts(
                settings=settings,
                env={},
                store=store,
                catalog=ModelCatalog([model], model.id),
                providers=ProviderRegistry(settings, {}, overrides={"scripted": provider}),
                attach=attach,
            )
            tg.start_soon(
                lambda: acp.run_agent(HermesAgent(parts), agent_writer, agent_reader, use_unstable_protocol=True)
            )
            conn = acp.connect_to_agent(client, client_writer, client_reader, use_unstable_protocol=True)
            with anyio.fail_after(10):
                init = await conn.initialize(protocol_version=1)
                session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
                response = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hi")])
            await conn.close()
            tg.cancel_scope.cancel()
    finally:
        await store.aclose()
    assert init.agent_info is not None
    assert init.agent_info.name == "hermes-acp"
    assert response.stop_reason == "end_turn"
    assert client.text(session.session_id) == "plain SDK path"


async def test_session_new_response_matches_golden(tmp_path: Path) -> None:
    from tests.fakes.server import open_raw

    async with open_raw(tmp_path, provider=ScriptedProvider()) as raw:
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        await raw.response(1)
        await raw.send(
            {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(tmp_path), "mcpServers": []}}
        )
        result = (await raw.response(2))["result"]
    result["sessionId"] = "<session id>"
    assert result == json.loads((GOLDEN / "session_new.json").read_text())
