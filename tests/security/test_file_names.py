"""File names that are not UTF-8 (``os.listdir`` keeps their bytes as surrogate escapes) or that hide invisible
characters: ``list_files`` and ``search_files`` show them with ``\\xNN`` / ``\\uNNNN`` escapes (lossless, always
encodable), say so, and keep working; through the real process the turn does not fail."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import anyio
import pytest

from fixtures.hostile_mcp import find_hidden
from hermes_acp.tools.listing import ListFilesTool
from hermes_acp.tools.search import SearchFilesTool
from tests.fakes.agent_process import spawn_agent
from tests.tools.helpers import call, context

pytestmark = pytest.mark.anyio

ENGINES = [None, *([shutil.which("rg")] if shutil.which("rg") else [])]


def hostile_tree(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    with open(os.path.join(os.fsencode(root), b"caf\xe9.txt"), "wb") as handle:
        handle.write(b"needle in latin-1\n")
    (root / "zero\u200bwidth.txt").write_text("needle hidden\n")
    (root / "plain.txt").write_text("needle plain\n")
    os.symlink(os.fsdecode(b"caf\xe9.txt"), root / "link-to-cafe")


async def test_list_files_shows_undecodable_and_hidden_names_escaped(tmp_path: Path) -> None:
    hostile_tree(tmp_path)
    called = await call(ListFilesTool(), context(tmp_path), path=".")
    text = called.text
    assert "caf\\xe9.txt" in text and "zero\\u200bwidth.txt" in text and "plain.txt" in text
    assert "link-to-cafe -> caf\\xe9.txt" in text
    assert "escapes hold bytes that are not UTF-8" in text
    text.encode("utf-8")  # always encodable
    assert find_hidden(text) == []


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: "ripgrep" if e else "walker")
async def test_globs_and_searches_show_the_names_escaped(tmp_path: Path, engine: str | None) -> None:
    hostile_tree(tmp_path)
    listed = await call(ListFilesTool(ripgrep=engine), context(tmp_path), path=".", glob="*.txt")
    assert "caf\\xe9.txt" in listed.text and "zero\\u200bwidth.txt" in listed.text
    found = await call(SearchFilesTool(ripgrep=engine), context(tmp_path), pattern="needle")
    assert "caf\\xe9.txt:1: needle in latin-1" in found.text
    assert "zero\\u200bwidth.txt:1: needle hidden" in found.text
    for text in (listed.text, found.text):
        text.encode("utf-8")
        assert find_hidden(text) == [] and "escapes hold bytes" in text


async def test_plain_names_get_no_note(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    called = await call(ListFilesTool(), context(tmp_path), path=".")
    assert "escapes" not in called.text


async def test_a_listing_with_such_names_does_not_fail_the_turn(tmp_path: Path) -> None:
    scenario = {
        "name": "list",
        "responses": [
            {"steps": [{"tool_call": {"id": "l", "name": "list_files", "arguments": {"path": "."}}}]},
            {"steps": [{"tool_call": {"id": "s", "name": "search_files", "arguments": {"pattern": "needle"}}}]},
            {"steps": [{"text": "listed"}]},
        ],
    }
    async with spawn_agent(tmp_path, scenario) as agent:
        hostile_tree(agent.workspace)
        session_id = await agent.new_session()
        with anyio.fail_after(60):
            response = await agent.prompt(session_id, "list")
        assert response.stop_reason == "end_turn"
        cards = agent.client.cards(session_id)
        assert cards["l"]["status"] == "completed" and cards["s"]["status"] == "completed"
        assert "caf\\\\xe9.txt" in json.dumps(cards["l"]["content"])
        assert "caf\\\\xe9.txt" in json.dumps(agent.model_requests()[2].body["messages"])
