"""The MCP client's own share of "no hidden text": schemas at any depth, tool names, titles and descriptions, answers
and error messages pass the one sanitizer (lone surrogates included), with the removals counted; the remote name a
call needs is kept as the server spelled it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fixtures.hostile_mcp import HIDDEN, LONE_SURROGATE, find_hidden
from fixtures.hostile_mcp.server import LOOKUP, _surface
from hermes_acp.core.sanitize import Removals
from hermes_acp.errors import OutcomeUnknownError, ToolError
from hermes_acp.mcp_client import McpTimeouts, McpTool, normalise_schema
from hermes_acp.mcp_client.naming import ToolKey, assign_names, sanitise
from hermes_acp.tools.approval import Approval
from tests.mcp.support import context

pytestmark = pytest.mark.anyio

H = HIDDEN + LONE_SURROGATE


def test_schemas_are_clean_at_any_depth_and_the_removals_are_counted() -> None:
    [lookup, *_] = _surface(H)["tools"]
    removals = Removals()
    schema = normalise_schema(lookup["inputSchema"], removals)
    assert find_hidden(schema) == []
    assert schema["properties"]["key"]["enum"][1] == "beta"
    assert schema["properties"]["speed"]["enum"][1] == "slow", "the union of consts still collapses"
    counts = removals.as_log()
    assert set(counts) == {"tag", "bidi", "variation_selector", "zero_width", "surrogate"}
    assert counts["surrogate"] >= 8, "every string of the schema was looked at"
    assert find_hidden(normalise_schema(lookup["inputSchema"])) == [], "the counter is optional"


def test_model_facing_names_drop_hidden_characters_instead_of_underscoring_them() -> None:
    assert sanitise(LOOKUP) == "lookup"
    assert sanitise("a\U000e0041b") == "ab"
    names = assign_names([ToolKey(0, "hos\u202etile", LOOKUP)])
    assert list(names.values()) == ["mcp__hostile__lookup"]


class _Connection:
    """Stands in for a ServerConnection: a name and one canned answer or failure."""

    name = "hostile"
    timeouts = McpTimeouts()

    def __init__(self, answer: dict[str, Any] | None = None, failure: ToolError | None = None):
        self.answer = answer
        self.failure = failure
        self.called: list[str] = []

    async def call_tool(self, tool: str, arguments: dict[str, Any], *, read_only: bool, **_call: Any) -> dict[str, Any]:
        self.called.append(tool)
        if self.failure is not None:
            raise self.failure
        assert self.answer is not None
        return self.answer


def _tool(connection: _Connection) -> McpTool:
    [lookup, *_] = _surface(H)["tools"]
    return McpTool("mcp__hostile__lookup", connection, lookup)  # type: ignore[arg-type]


async def test_a_tool_shows_clean_text_and_calls_the_server_by_its_own_name(tmp_path: Path) -> None:
    answer = {
        "content": [{"type": "text", "text": "value" + H}],
        "structuredContent": {"answer" + H: ["deep" + H]},
        "_meta": {"example.com/x": "meta" + H},
    }
    connection = _Connection(answer)
    tool = _tool(connection)
    assert find_hidden([tool.title, tool.description, tool.input_schema]) == []
    assert tool.remote_name == LOOKUP
    ctx = context(tmp_path)
    outcome = await tool.run({"key": "alpha"}, Approval(ctx.tool_call_id, granted="policy"), ctx)
    assert connection.called == [LOOKUP]
    assert find_hidden([outcome.parts[0].text, [b.text for b in outcome.content], outcome.raw_output]) == []  # type: ignore[union-attr]
    assert outcome.raw_output is not None
    assert outcome.raw_output["structuredContent"] == {"answer\ufffd": ["deep\ufffd"]}, "a lone surrogate is U+FFFD"


@pytest.mark.parametrize(
    "failure",
    [
        ToolError("hostile/lookup: the server answered with an error: exploded" + H),
        OutcomeUnknownError("broke" + H, code="transport_outcome_unknown"),
    ],
)
async def test_error_messages_from_the_server_are_cleaned_and_keep_their_kind(
    tmp_path: Path, failure: ToolError
) -> None:
    tool = _tool(_Connection(failure=failure))
    ctx = context(tmp_path)
    with pytest.raises(type(failure)) as raised:
        await tool.run({"key": "alpha"}, Approval(ctx.tool_call_id, granted="policy"), ctx)
    assert find_hidden(str(raised.value)) == []
    assert raised.value.code == failure.code


async def test_answers_without_hidden_text_come_back_unchanged(tmp_path: Path) -> None:
    answer = {"content": [{"type": "text", "text": "plain"}], "structuredContent": {"answer": ["as it was"]}}
    tool = _tool(_Connection(answer))
    ctx = context(tmp_path)
    outcome = await tool.run({"key": "alpha"}, Approval(ctx.tool_call_id, granted="policy"), ctx)
    assert outcome.raw_output is not None and outcome.raw_output["structuredContent"] == {"answer": ["as it was"]}
    assert [b.text for b in outcome.content] == ["plain"]  # type: ignore[union-attr]
