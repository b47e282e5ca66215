"""The checker every harness runs on its frames: it finds the schema, and it can fail (each of these frames is
wrong in a way a client would notice)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.acp_schema import SCHEMA_DIR, Direction, FrameLog, negotiated_version, schema_dir, schema_problems
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


# -- v2 -------------------------------------------------------------------------------------------------------


def _v2_log(*frames: tuple[Direction, dict[str, Any]]) -> FrameLog:
    """A log whose ``initialize`` chose v2, then ``frames``."""
    init = {"protocolVersion": 2, "info": {"name": "c", "version": "1"}}
    answer = {"protocolVersion": 2, "info": {"name": "hermes-acp", "version": "0"}}
    return FrameLog(
        [
            ("to_agent", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
            ("to_client", {"jsonrpc": "2.0", "id": 0, "result": answer}),
            *frames,
        ]
    )


def _v2_problems(*frames: tuple[Direction, dict[str, Any]]) -> list[str]:
    log = _v2_log(*frames)
    with pytest.raises(AssertionError) as raised:
        log.check()
    return str(raised.value).splitlines()[1:]


@pytest.fixture
def _v2_schema() -> None:
    if not (schema_dir(2) / "schema.json").is_file():
        lane_missing("the ACP v2 schema is not installed: run `bash .ci/acp-schema-setup.sh`")


def test_the_version_is_the_one_initialize_chose() -> None:
    assert negotiated_version(_v2_log().frames) == 2
    assert negotiated_version([]) == 1
    v1 = [
        ("to_agent", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2}}),
        ("to_client", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}),
    ]
    assert negotiated_version(v1) == 1  # type: ignore[arg-type]


@pytest.mark.usefixtures("_v2_schema")
def test_good_v2_frames_pass() -> None:
    _v2_log(
        (
            "to_agent",
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "session/prompt",
                "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]},
            },
        ),
        ("to_client", {"jsonrpc": "2.0", "id": 1, "result": {"messageId": "u1"}}),
        _update(
            {
                "sessionUpdate": "state_update",
                "state": "idle",
                "stopReason": "end_turn",
                "usage": {"totalTokens": 3, "inputTokens": 2, "outputTokens": 1},
            }
        ),
        _update({"sessionUpdate": "plan_removed", "planId": "steps"}),
        _update({"sessionUpdate": "_hermes/extension", "x": 1}),
    ).check()


@pytest.mark.usefixtures("_v2_schema")
@pytest.mark.parametrize(
    ("frame", "named"),
    [
        (
            _update({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "Read"}),
            "'tool_call' is no SessionUpdate",
        ),
        (_update({"sessionUpdate": "current_mode_update", "currentModeId": "x"}), "'current_mode_update'"),
        (_update({"sessionUpdate": "plan", "entries": []}), "'plan' is no SessionUpdate"),
        (
            _update({"sessionUpdate": "tool_call_update", "toolCallId": "c", "content": [{"type": "image2"}]}),
            "'image2'",
        ),
        (
            _update({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "done"}),
            "'done' is no ToolCallStatus",
        ),
        (_update({"sessionUpdate": "state_update", "state": "paused"}), "'paused' is no StateUpdate"),
        (_update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "finished"}), "'finished'"),
        (
            _update({"sessionUpdate": "agent_message", "messageId": "a", "content": [{"type": "diff"}]}),
            "'diff' is no ContentBlock",
        ),
        (
            _update({"sessionUpdate": "plan_update", "plan": {"type": "steps", "planId": "p"}}),
            "'steps' is no PlanUpdateContent",
        ),
    ],
    ids=[
        "v1 tool_call",
        "v1 mode update",
        "v1 plan",
        "content type",
        "tool status",
        "state",
        "stop reason",
        "message content",
        "plan type",
    ],
)
def test_v1_leakage_and_unknown_variants_the_open_schema_lets_through_are_named(
    frame: tuple[Direction, dict[str, Any]], named: str
) -> None:
    (problem,) = _v2_problems(frame)
    assert named in problem and "v2 defines" in problem


@pytest.mark.usefixtures("_v2_schema")
@pytest.mark.parametrize(
    "frame",
    [
        _update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "no id"}}),
        _update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c",
                "content": [{"type": "diff", "path": "/a", "newText": "x"}],
            }
        ),
        ("to_agent", {"jsonrpc": "2.0", "id": 5, "method": "session/load", "params": {"sessionId": "s", "cwd": "/w"}}),
        (
            "to_agent",
            {"jsonrpc": "2.0", "id": 6, "method": "session/set_model", "params": {"sessionId": "s", "modelId": "m"}},
        ),
        (
            "to_client",
            {"jsonrpc": "2.0", "id": 7, "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/a"}},
        ),
    ],
    ids=["chunk without messageId", "v1 diff", "session/load", "session/set_model", "client fs"],
)
def test_v1_frames_the_v2_schema_rejects_are_named(frame: tuple[Direction, dict[str, Any]]) -> None:
    assert len(_v2_problems(frame)) == 1


@pytest.mark.usefixtures("_v2_schema")
def test_a_v2_answer_is_checked_against_what_it_answers_and_the_closed_lists() -> None:
    asked: tuple[Direction, dict[str, Any]] = (
        "to_agent",
        {"jsonrpc": "2.0", "id": 3, "method": "session/status", "params": {"sessionId": "s"}},
    )
    answer: tuple[Direction, dict[str, Any]] = ("to_client", {"jsonrpc": "2.0", "id": 3, "result": {"status": "busy"}})
    (problem,) = _v2_problems(asked, answer)
    assert "'busy' is no SessionStatus" in problem
    v1_answer: tuple[Direction, dict[str, Any]] = ("to_client", {"jsonrpc": "2.0", "id": 3, "result": {}})
    (missing,) = _v2_problems(asked, v1_answer)
    assert "status" in missing and "required" in missing
