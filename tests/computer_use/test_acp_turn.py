"""A scripted-model turn through the in-process ACP pair: capture, click 2 + 3 =, verify 5. The client receives
screenshots as image content and the clicks' approvals as permission requests."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.cua_driver_sim import command, read_journal, read_state
from hermes_acp.computer_use import ComputerUse
from hermes_acp.config import load_settings
from hermes_acp.core import TextPart, ToolCallPart, ToolResultMessage
from hermes_acp.providers.base import ProviderRequest
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.providers.scripted import ScriptedProvider, ScriptedReply, text_reply, tool_reply
from tests.computer_use.support import image_gate
from tests.fakes.acp_client import RecordingClient
from tests.fakes.server import open_pair, scripted_model

from .owner import CountingRuntime

pytestmark = pytest.mark.anyio
KEYS = ("2", "+", "3", "=")


def _call(call_id: str, **arguments: Any) -> ToolCallPart:
    return ToolCallPart(id=call_id, name="computer_use", arguments=json.dumps(arguments))


def _clicks(request: ProviderRequest) -> ScriptedReply:
    """The model reads the capture result and clicks the keys by their element indices."""
    result = next(m for m in reversed(request.messages) if isinstance(m, ToolResultMessage))
    first = result.parts[0]
    assert isinstance(first, TextPart)
    index = {row["label"]: row["index"] for row in json.loads(first.text)["elements"]}
    return tool_reply(*[_call(f"click_{n}", action="click", element=index[key]) for n, key in enumerate(KEYS)])


async def test_capture_click_2_plus_3_and_verify_5_over_acp(tmp_path: Path) -> None:
    expect = [{"element": {"selector": {"role": "label"}, "value_equals": "5"}}]
    provider = ScriptedProvider(
        [
            tool_reply(_call("cap", action="capture", app="Calculator")),
            _clicks,
            tool_reply(_call("check", action="verify_state", expect=expect)),
            text_reply("The calculator shows 5."),
        ]
    )
    model = scripted_model(vision=True)
    argv, env = command(journal=tmp_path / "journal.jsonl", state=tmp_path / "state.json")
    home = tmp_path / "cu-home"
    settings = load_settings({"HERMES_CUA_DRIVER_CMD": shlex.join(argv)}, home=home)
    owner = CountingRuntime()
    client = RecordingClient(answers=["allow_always"])
    async with anyio.create_task_group() as group:
        await group.start(owner.run)
        gate = image_gate(settings, model, ModelCatalog([model], model.id), ProviderRegistry(settings, {}))
        cu = ComputerUse.for_session(owner, settings, gate=gate, env=env)
        async with open_pair(tmp_path, provider=provider, models=[model], tools=[cu.tool], client=client) as pair:
            session_id = await pair.new_session()
            with anyio.fail_after(30):
                response = await pair.prompt(session_id, "Compute 2 + 3 on the calculator.")
            cards = pair.client.cards(session_id)
            permissions = list(pair.client.permissions)
        await owner.aclose()
    assert response.stop_reason == "end_turn"
    assert read_state(tmp_path / "state.json")["calculator"]["display"] == "5"
    assert [(entry.get("element") or {}).get("label") for entry in read_journal(tmp_path / "journal.jsonl")] == list(
        KEYS
    )
    capture_content = cards["cap"]["content"]
    images = [c["content"] for c in capture_content if c["content"]["type"] == "image"]
    assert cards["cap"]["status"] == "completed" and len(images) == 1
    assert images[0]["mimeType"].startswith("image/") and len(images[0]["data"]) > 100
    assert not any(c["content"]["type"] == "text" and len(c["content"]["text"]) > 2000 for c in capture_content)
    assert len(permissions) == 1  # "always" for background covers the other clicks
    asked = permissions[0].tool_call
    assert asked["toolCallId"] == "click_0" and "Calculator" in asked["title"]
    assert any(c["content"]["type"] == "image" for c in asked["content"])
    assert all(cards[f"click_{n}"]["status"] == "completed" for n in range(4))
    assert cards["check"]["status"] == "completed" and cards["check"]["rawOutput"]["satisfied"] is True
