"""An agent-owned terminal rendered per client: Zed's ``_meta`` dialect for a client with ``terminal_cards``, the
fallback text for any other, ACP v2's terminal updates from the same events; every frame checked against the
2.4.0 schema (v1 for what we send today, v2 for the v2 adapter)."""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource

from hermes_acp.core import AgentTerminalBlock, TextBlock, ToolCallSettled, ToolCallStarted
from hermes_acp.protocol.convert import event_updates, live_update
from hermes_acp.protocol.terminal_cards import Exited, Opened, Output, terminal_events, v2_updates
from hermes_acp.turns.ports import LiveTerminalOutput
from tests.fakes.acp_schema import SCHEMA_DIR, Direction, schema_problems
from tests.fakes.lanes import lane_missing

STARTED = AgentTerminalBlock(
    terminal_id="call_1", command="make test", cwd="/w", fallback=[TextBlock(text="```sh\nmake test\n```")]
)
ENDED = AgentTerminalBlock(
    terminal_id="call_1",
    command="make test",
    cwd="/w",
    output="ok\n",
    ended=True,
    exit_code=0,
    fallback=[TextBlock(text="Exit code 0.\n```\nok\n```")],
)
START = ToolCallStarted(
    turn_id="t", tool_call_id="call_1", name="terminal", title="Run `make test`", tool_kind="execute",
    content=[STARTED], marks_run=True,
)  # fmt: skip
SETTLE = ToolCallSettled(turn_id="t", tool_call_id="call_1", status="completed", content=[ENDED], result=None)
LIVE = LiveTerminalOutput("call_1", "call_1", "ok\n", [TextBlock(text="```\nok\n```")])


@pytest.fixture(autouse=True)
def _schema() -> None:
    if not (SCHEMA_DIR / "schema.json").is_file():
        lane_missing("the ACP schema is not installed: run `bash .ci/acp-schema-setup.sh`")


def valid(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    frames: list[tuple[Direction, dict[str, Any]]] = [
        ("to_client", {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": u}})
        for u in updates
    ]
    assert schema_problems(frames, pending={}) == []
    return updates


def test_a_terminal_client_gets_zeds_terminal_card_live() -> None:
    (started,) = valid(event_updates(START, live=True, terminal_cards=True))
    assert started["title"] == "make test", "Zed labels the terminal with the title: the command"
    assert started["content"] == [{"type": "terminal", "terminalId": "call_1"}]
    assert started["_meta"] == {"terminal_info": {"terminal_id": "call_1", "cwd": "/w", "command": "make test"}}
    (output,) = valid([u for u in [live_update(LIVE, terminal_cards=True)] if u is not None])
    assert output == {
        "sessionUpdate": "tool_call_update", "toolCallId": "call_1",
        "_meta": {"terminal_output": {"terminal_id": "call_1", "data": "ok\n"}},
    }  # fmt: skip
    (ended,) = valid(event_updates(SETTLE, live=True, terminal_cards=True))
    assert ended["status"] == "completed" and ended["content"] == [{"type": "terminal", "terminalId": "call_1"}]
    assert ended["_meta"] == {"terminal_exit": {"terminal_id": "call_1", "exit_code": 0, "signal": None}}, (
        "live, the output already streamed: the settlement only ends the terminal"
    )


def test_a_replay_sends_what_the_terminal_kept_then_its_exit() -> None:
    (ended,) = valid(event_updates(SETTLE, live=False, terminal_cards=True))
    assert ended["_meta"] == {
        "terminal_output": {"terminal_id": "call_1", "data": "ok\n"},
        "terminal_exit": {"terminal_id": "call_1", "exit_code": 0, "signal": None},
    }
    assert valid(event_updates(START, live=False, terminal_cards=True)) == event_updates(
        START, live=True, terminal_cards=True
    )


def test_any_other_client_gets_the_fallback_text_and_no_meta() -> None:
    (started,) = valid(event_updates(START, live=True))
    assert started["title"] == "Run `make test`" and "_meta" not in started
    assert started["content"] == [{"type": "content", "content": {"type": "text", "text": "```sh\nmake test\n```"}}]
    (output,) = valid([u for u in [live_update(LIVE)] if u is not None])
    assert output["status"] == "in_progress" and "_meta" not in output
    assert output["content"] == [{"type": "content", "content": {"type": "text", "text": "```\nok\n```"}}]
    for live in (True, False):
        (ended,) = valid(event_updates(SETTLE, live=live))
        assert "_meta" not in ended
        assert ended["content"] == [
            {"type": "content", "content": {"type": "text", "text": "Exit code 0.\n```\nok\n```"}}
        ]


def test_a_terminal_that_never_ran_is_closed_and_not_shown() -> None:
    refused = ToolCallSettled(
        turn_id="t", tool_call_id="call_1", status="failed", result=None,
        content=[STARTED.unfinished(), TextBlock(text="Error (hard_blocked): refused in every mode")],
    )  # fmt: skip
    for live in (True, False):
        (ended,) = valid(event_updates(refused, live=live, terminal_cards=True))
        assert ended["content"] == [
            {"type": "content", "content": {"type": "text", "text": "Error (hard_blocked): refused in every mode"}}
        ]
        assert ended["_meta"] == {"terminal_exit": {"terminal_id": "call_1", "exit_code": None, "signal": None}}


def test_a_command_ended_by_its_time_limit_says_so_under_its_terminal() -> None:
    killed = ENDED.model_copy(
        update={"exit_code": None, "signal": "SIGTERM", "note": "Timed out after 5 s: the command was killed."}
    )
    settle = SETTLE.model_copy(update={"status": "failed", "content": [killed]})
    (ended,) = valid(event_updates(settle, live=True, terminal_cards=True))
    assert ended["content"] == [
        {"type": "terminal", "terminalId": "call_1"},
        {"type": "content", "content": {"type": "text", "text": "Timed out after 5 s: the command was killed."}},
    ]
    assert ended["_meta"]["terminal_exit"] == {"terminal_id": "call_1", "exit_code": None, "signal": "SIGTERM"}


# -- ACP v2: the same events ------------------------------------------------------------------------------------


@functools.cache
def _v2_validator() -> jsonschema.protocols.Validator:
    root = json.loads((SCHEMA_DIR.parent / "v2" / "schema.json").read_text())
    registry: Registry[Any] = Registry().with_resource("urn:acp:v2", Resource.from_contents(root))
    cls = jsonschema.validators.validator_for(root)
    return cls({"$ref": "urn:acp:v2#/$defs/UpdateSessionNotification"}, registry=registry)


def test_the_same_events_render_as_acp_v2_agent_owned_terminals() -> None:
    if not (SCHEMA_DIR.parent / "v2" / "schema.json").is_file():
        lane_missing("the ACP v2 schema is not installed: run `bash .ci/acp-schema-setup.sh`")
    events = [
        *terminal_events([STARTED]),
        *terminal_events(LIVE),
        *terminal_events([ENDED], live=True),
    ]
    assert events == [
        Opened("call_1", "make test", "/w"),
        Output("call_1", "ok\n"),
        Exited("call_1", 0, None),
    ]
    assert terminal_events([ENDED], live=False) == [Output("call_1", "ok\n"), Exited("call_1", 0, None)]
    updates = v2_updates(events)
    assert updates == [
        {"sessionUpdate": "terminal_update", "terminalId": "call_1", "command": "make test", "cwd": "/w"},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "call_1", "data": "b2sK"},
        {"sessionUpdate": "terminal_update", "terminalId": "call_1", "exitStatus": {"exitCode": 0}},
    ]
    for update in updates:
        errors = list(_v2_validator().iter_errors({"sessionId": "s", "update": update}))
        assert errors == [], errors[0].message
