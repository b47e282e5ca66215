"""Attachments reach the model without hidden text: embedded text resources, files read through a resource link,
and the names of links that are not read; each removal is counted in the log. Also through the real process."""

from __future__ import annotations

import json
from pathlib import Path

import acp
import anyio
import pytest

from fixtures.hostile_mcp import HIDDEN, LONE_SURROGATE, find_hidden
from hermes_acp.core import DisplayBlock, ResourceBlock, ResourceLinkBlock, TextPart
from hermes_acp.tools.context import ApprovalRequest, Workspace
from hermes_acp.turns.prompt_input import convert_prompt
from tests.fakes.acp_client import text_block
from tests.fakes.agent_process import spawn_agent

pytestmark = pytest.mark.anyio

H = HIDDEN + LONE_SURROGATE


async def never(path: Path, request: ApprovalRequest) -> None:
    raise AssertionError("nothing outside the workspace is read here")


async def test_attachment_text_is_cleaned(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "notes.md").write_text("notes" + HIDDEN, encoding="utf-8")
    blocks: list[DisplayBlock] = [
        ResourceBlock(uri="file:///embedded.txt", text="embedded" + H, media_type="text/plain"),
        ResourceLinkBlock(uri=(tmp_path / "notes.md").as_uri(), name="notes.md"),
        ResourceLinkBlock(uri="https://example.com/x" + HIDDEN, name="link" + H),
    ]
    converted = await convert_prompt(blocks, workspace=Workspace(cwd=tmp_path), ask_outside=never)
    texts = [p.text for p in converted.message.parts if isinstance(p, TextPart)]
    assert find_hidden(texts) == []
    assert "embedded\ufffd" in texts[0] and texts[1].endswith("notes") and "link\ufffd" in texts[2]
    logged = [r.msg for r in caplog.records if isinstance(r.msg, dict) and "attachment" in str(r.msg.get("event"))]
    assert len(logged) == 3 and all(entry["tag"] > 0 for entry in logged)


async def test_an_attached_file_reaches_the_model_clean_through_the_real_process(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path) as agent:
        (agent.workspace / "spec.md").write_text("the spec" + HIDDEN, encoding="utf-8")
        session_id = await agent.new_session()
        link = acp.schema.ResourceContentBlock(
            type="resource_link", uri=(agent.workspace / "spec.md").as_uri(), name="spec.md"
        )
        with anyio.fail_after(60):
            await agent.conn.prompt(session_id=session_id, prompt=[text_block("read this"), link])
        [request] = agent.model_requests()
        assert "the spec" in json.dumps(request.body)
        assert find_hidden(request.body) == []
