"""The checker every harness runs on its frames: it finds the schema, and it can fail (each of these frames is
wrong in a way a client would notice)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.acp_schema import SCHEMA_DIR, Direction, FrameLog, schema_problems
from tests.fakes.lanes import lane_missing


@pytest.fixture(autouse=True)
def _schema() -> None:
    if not (SCHEMA_DIR / "schema.json").is_file():
        lane_missing("the ACP schema is not installed: run `bash .ci/acp-schema-setup.sh`")


def _update(update: dict[str, Any]) -> tuple[Direction, dict[str, Any]]:
    return ("to_client", {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}})


def _problems(*frames: tuple[Direction, dict[str, Any]]) -> list[str]:
    log = FrameLog(list(frames))
    return schema_problems(
        log.frames, pending={(d, m["id"]): m["method"] for d, m in frames if "method" in m and "id" in m}
    )


def test_good_frames_pass() -> None:
    assert (
        _problems(
            (
                "to_agent",
                {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": []}},
            ),
            ("to_client", {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}}),
            _update({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "Read", "name": "read_file"}),
            _update({"sessionUpdate": "notice", "severity": "warning", "title": "MCP server x did not start"}),
            ("to_client", {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 4}}),
        )
        == []
    )


@pytest.mark.parametrize(
    "frame",
    [
        _update({"sessionUpdate": "tool_call", "toolCallId": "c"}),
        _update({"sessionUpdate": "notice", "severity": "warning", "title": ""}),
        _update({"sessionUpdate": "usage_update", "used": -1, "size": 10}),
        (
            "to_client",
            {"jsonrpc": "2.0", "id": 9, "method": "session/request_permission", "params": {"sessionId": "s"}},
        ),
    ],
    ids=["tool call without a title", "empty notice title", "negative usage", "permission without options"],
)
def test_bad_frames_are_named(frame: tuple[Direction, dict[str, Any]]) -> None:
    (problem,) = _problems(frame)
    assert "to_client" in problem


def test_an_answer_is_checked_against_what_it_answers() -> None:
    asked: tuple[Direction, dict[str, Any]] = (
        "to_agent",
        {"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {}},
    )
    answer: tuple[Direction, dict[str, Any]] = (
        "to_client",
        {"jsonrpc": "2.0", "id": 3, "result": {"sessions": [{"cwd": "/w"}]}},
    )
    (problem,) = _problems(asked, answer)
    assert "ListSessionsResponse" in problem and "sessionId" in problem
