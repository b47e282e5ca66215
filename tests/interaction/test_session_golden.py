"""The ``session/new`` answer, pinned byte for byte (modes, config options and the legacy ``models`` block)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_acp.providers.scripted import ScriptedProvider

pytestmark = pytest.mark.anyio
GOLDEN = Path(__file__).parent.parent / "golden"


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
