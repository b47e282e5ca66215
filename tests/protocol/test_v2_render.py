"""ACP v2 rendering of the stored session log and live updates (``protocol/v2/render.py``, ``replay.py``): every
event kind, live and replayed, as v2 updates that pass the v2 schema and its closed lists of kinds; the same log
rendered in v1 and v2 naming the same messages and tool calls; live equal to replay but where v2 says otherwise."""

from __future__ import annotations

import base64
import difflib
from typing import Any

import pytest

from hermes_acp.core import (
    AgentTerminalBlock,
    DiffBlock,
    PermissionResolved,
    TextBlock,
    ToolCallSettled,
    ToolCallStarted,
    TurnEnded,
    Usage,
)
from hermes_acp.core.notice import Notice
from hermes_acp.protocol import convert
from hermes_acp.protocol.v2.render import (
    UPDATE_KINDS,
    Features,
    event_updates,
    git_patch,
    live_update,
    notice,
    state_update,
    thought_id,
    tool_content,
)
from hermes_acp.protocol.v2.replay import replay_updates, resume_state
from hermes_acp.providers.catalog import Cost
from hermes_acp.turns.ports import (
    LiveCancelOpen,
    LiveCompaction,
    LiveCompactionChunk,
    LiveSubagentState,
    LiveTerminalOutput,
    LiveTextChunk,
    LiveThoughtChunk,
    LiveToolProgress,
    LiveUpdate,
    LiveUsage,
)
from tests.fakes.acp_schema import Direction, schema_dir, schema_problems
from tests.fakes.lanes import lane_missing
from tests.protocol.every_event import EVENTS, KINDS, LOG, TERMINAL_DONE, TERMINAL_OPEN

CANCELS = Features(cancel_tool_calls=True, cancel_terminals=True)


@pytest.fixture(autouse=True)
def _schema() -> None:
    if not (schema_dir(2) / "schema.json").is_file():
        lane_missing("the ACP v2 schema is not installed: run `bash .ci/acp-schema-setup.sh`")


def frames(updates: list[dict[str, Any]]) -> list[tuple[Direction, dict[str, Any]]]:
    return [
        ("to_client", {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": u}})
        for u in updates
    ]


def valid(updates: list[dict[str, Any]], version: int = 2) -> list[dict[str, Any]]:
    """``updates``, once each has passed the schema of ``version`` (and, for v2, its closed lists)."""
    assert schema_problems(frames(updates), pending={}, version=2 if version == 2 else 1) == []
    return updates


def test_the_log_holds_every_event_kind() -> None:
    assert {type(event) for event in EVENTS} == KINDS


@pytest.mark.parametrize("features", [Features(), CANCELS], ids=["baseline", "cancels"])
@pytest.mark.parametrize("live", [True, False], ids=["live", "replay"])
@pytest.mark.parametrize("event", EVENTS, ids=lambda e: f"{e.kind}")
def test_every_stored_event_renders_as_valid_v2(event: Any, live: bool, features: Features) -> None:
    updates = valid(event_updates(event, live=live, features=features))
    assert {u["sessionUpdate"] for u in updates} <= UPDATE_KINDS


def test_a_prompt_is_a_user_message_live_and_replayed_with_its_id_and_every_block() -> None:
    prompt = EVENTS[1]
    live = event_updates(prompt, live=True)
    assert live == event_updates(prompt, live=False)
    (message,) = live
    assert message["sessionUpdate"] == "user_message"
    assert message["messageId"] == "u1"
    assert [block["type"] for block in message["content"]] == [
        "text",
        "image",
        "audio",
        "resource_link",
        "resource",
        "resource",
    ]


def test_a_response_is_a_thought_and_a_message_upserted_by_id_live_and_replayed() -> None:
    stored = EVENTS[3]
    assert (
        event_updates(stored, live=True)
        == event_updates(stored, live=False)
        == [
            {
                "sessionUpdate": "agent_thought",
                "messageId": "a1:thought",
                "content": [{"type": "text", "text": "Hmm, the tokenizer."}],
            },
            {
                "sessionUpdate": "agent_message",
                "messageId": "a1",
                "content": [{"type": "text", "text": "Looking at it."}],
            },
        ]
    )


def test_a_checkpoint_is_chunks_on_a_replay_only_under_the_same_ids_as_the_live_stream() -> None:
    checkpoint = EVENTS[2]
    assert event_updates(checkpoint, live=True) == []
    assert event_updates(checkpoint, live=False) == [
        {"sessionUpdate": "agent_thought_chunk", "messageId": "a1:thought", "content": {"type": "text", "text": "Hmm"}},
        {"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "Looking"}},
    ]
    assert live_update(LiveThoughtChunk("a1", "Hmm"))["messageId"] == thought_id("a1")  # type: ignore[index]
    assert live_update(LiveTextChunk("a1", "Looking"))["messageId"] == "a1"  # type: ignore[index]


def test_a_tool_call_is_an_upsert_from_its_first_appearance() -> None:
    (call,) = event_updates(EVENTS[4], live=True)
    assert call == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call_edit",
        "name": "edit_file",
        "title": "Edit parser.py",
        "kind": "edit",
        "status": "pending",
        "rawInput": {"path": "/w/parser.py"},
        "locations": [{"path": "/w/parser.py", "line": 3}],
        "content": [
            {
                "type": "diff",
                "changes": [{"operation": "modify", "path": "/w/parser.py", "fileType": "text"}],
                "patch": {
                    "format": "git_patch",
                    "text": "diff --git /w/parser.py /w/parser.py\n--- /w/parser.py\n+++ /w/parser.py\n"
                    "@@ -1,2 +1,2 @@\n a\n-b\n+c\n",
                },
            }
        ],
    }


def test_a_new_file_is_an_added_change_with_a_patch_from_dev_null() -> None:
    new = DiffBlock(path="/w/new file.py", old_text=None, new_text="x = 1")
    assert git_patch(new) == (
        "diff --git /w/new file.py /w/new file.py\nnew file mode 100644\n--- /dev/null\n+++ /w/new file.py\n"
        "@@ -0,0 +1 @@\n+x = 1\n\\ No newline at end of file\n"
    )
    (content,) = tool_content([new])
    assert content["changes"] == [{"operation": "add", "path": "/w/new file.py", "fileType": "text"}]


def test_a_path_git_would_quote_is_quoted_as_git_quotes_it() -> None:
    patch = git_patch(DiffBlock(path='/w/"é"\t.py', old_text="a\n", new_text="b\n"))
    assert patch.splitlines()[0] == 'diff --git "/w/\\"\\303\\251\\"\\t.py" "/w/\\"\\303\\251\\"\\t.py"'


def test_an_agent_terminal_opens_streams_and_exits_as_v2_terminal_updates() -> None:
    started = event_updates(EVENTS[8], live=True)
    assert started[0] == {
        "sessionUpdate": "terminal_update",
        "terminalId": "call_run",
        "command": "make test",
        "cwd": "/w",
    }
    assert started[1]["content"] == [{"type": "terminal", "terminalId": "call_run"}]
    assert live_update(LiveTerminalOutput("call_run", "call_run", "ok\n", [])) == {
        "sessionUpdate": "terminal_output_chunk",
        "terminalId": "call_run",
        "data": base64.b64encode(b"ok\n").decode(),
    }
    assert live_update(LiveTerminalOutput("call_run", "call_run", "", [])) is None
    settled_live = event_updates(EVENTS[10], live=True)
    assert settled_live[0] == {
        "sessionUpdate": "terminal_update",
        "terminalId": "call_run",
        "exitStatus": {"exitCode": 0},
    }
    assert settled_live[1]["content"] == [{"type": "terminal", "terminalId": "call_run"}]


def test_a_replayed_terminal_gets_what_it_kept_as_one_snapshot_not_chunks() -> None:
    settled = event_updates(EVENTS[10], live=False)
    assert settled[0] == {
        "sessionUpdate": "terminal_update",
        "terminalId": "call_run",
        "output": {"data": base64.b64encode(b"ok\n").decode()},
        "exitStatus": {"exitCode": 0},
    }
    assert "terminal_output_chunk" not in {u["sessionUpdate"] for u in settled}


def test_cancels_are_advertised_live_while_the_work_may_run_and_cleared_when_it_ends() -> None:
    started = valid(event_updates(EVENTS[8], live=True, features=CANCELS))
    assert started[0]["capabilities"] == {"cancel": {}}
    assert started[1]["capabilities"] == {"cancel": {}}
    for live in (True, False):
        ended = valid(event_updates(EVENTS[10], live=live, features=CANCELS))
        assert ended[0]["capabilities"] is None and ended[1]["capabilities"] is None
    replayed = event_updates(EVENTS[8], live=False, features=CANCELS)
    assert all("capabilities" not in u for u in replayed), "a replayed call may have ended: it advertises nothing"
    assert all("capabilities" not in u for u in event_updates(EVENTS[8], live=True))


def test_a_cancel_still_open_after_a_replay_is_a_capabilities_patch_where_the_connection_is_offered_it() -> None:
    call, command = LiveCancelOpen("call_run", "tool_call"), LiveCancelOpen("call_run", "terminal")
    rendered = [live_update(call, CANCELS), live_update(command, CANCELS)]
    assert valid([update for update in rendered if update is not None]) == [
        {"sessionUpdate": "tool_call_update", "toolCallId": "call_run", "capabilities": {"cancel": {}}},
        {"sessionUpdate": "terminal_update", "terminalId": "call_run", "capabilities": {"cancel": {}}},
    ]
    assert live_update(call) is None and live_update(command) is None, "not offered on this connection"
    only_calls = Features(cancel_tool_calls=True)
    assert live_update(call, only_calls) is not None and live_update(command, only_calls) is None
    assert convert.live_update(call) is None and convert.live_update(command) is None, "v1 has no per-call cancel"


def test_a_v1_client_terminal_is_never_named_but_its_text_stays() -> None:
    for live in (True, False):
        (settled,) = event_updates(EVENTS[12], live=live)
        assert settled["content"] == [{"type": "content", "content": {"type": "text", "text": "ls: no such file"}}]


def test_a_call_settled_by_a_cancel_is_cancelled() -> None:
    (settled,) = event_updates(EVENTS[14], live=True)
    assert settled["status"] == "cancelled"
    (failed,) = event_updates(EVENTS[12], live=True)
    assert failed["status"] == "failed"


def test_plans_always_go_by_id() -> None:
    steps, proposal, cleared = (event_updates(e, live=True) for e in EVENTS[15:18])
    assert steps == [
        {
            "sessionUpdate": "plan_update",
            "plan": {
                "type": "items",
                "planId": "steps",
                "entries": [{"content": "Fix the tokenizer", "priority": "medium", "status": "in_progress"}],
            },
        }
    ]
    assert proposal == [
        {
            "sessionUpdate": "plan_update",
            "plan": {"type": "markdown", "planId": "proposal", "content": "# Plan\n\n1. Fix it"},
        }
    ]
    assert cleared == [{"sessionUpdate": "plan_removed", "planId": "steps"}]


def test_text_stored_for_the_user_is_an_agent_message_of_its_own_id() -> None:
    notice_added, dropped, rewound = EVENTS[18], EVENTS[22], EVENTS[28]
    assert event_updates(notice_added, live=True) == [
        {
            "sessionUpdate": "agent_message",
            "messageId": "n1",
            "content": [{"type": "text", "text": "Audio is not forwarded to the model."}],
        }
    ]
    assert event_updates(dropped, live=True)[0]["messageId"] == "d1"
    assert event_updates(rewound, live=True)[0]["messageId"] == "r1"
    (steered,) = event_updates(EVENTS[20], live=True)
    assert steered == {
        "sessionUpdate": "user_message",
        "messageId": "s1",
        "content": [{"type": "text", "text": "use regex"}],
    }


def test_a_turn_ends_idle_live_and_renders_nothing_on_a_replay() -> None:
    ended = EVENTS[26]
    assert event_updates(ended, live=True) == [
        {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "end_turn",
            "usage": {
                "totalTokens": 120,
                "inputTokens": 100,
                "outputTokens": 20,
                "thoughtTokens": 0,
                "cachedReadTokens": 0,
                "cachedWriteTokens": 0,
            },
        }
    ]
    assert event_updates(ended, live=False) == []
    assert event_updates(TurnEnded(turn_id="t", stop_reason="cancelled"), live=True) == [
        {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}
    ]


def test_the_turn_states() -> None:
    updates = valid(
        [
            state_update("running"),
            state_update("requires_action"),
            state_update("idle", error={"code": -32000, "message": "Authentication required", "data": {"kind": "x"}}),
            state_update("idle", stop_reason="max_turn_requests", usage=Usage(), hermes={"limit": {"kind": "budget"}}),
        ]
    )
    assert updates == [
        {"sessionUpdate": "state_update", "state": "running"},
        {"sessionUpdate": "state_update", "state": "requires_action"},
        {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "error",
            "error": {"code": -32000, "message": "Authentication required", "data": {"kind": "x"}},
        },
        {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "max_turn_requests",
            "_meta": {"hermes": {"limit": {"kind": "budget"}}},
        },
    ]


def test_a_child_session_and_a_compaction_need_no_capability() -> None:
    announce, link = event_updates(EVENTS[23], live=True)
    assert announce["sessionUpdate"] == "subagent_update" and announce["state"] == {"state": "running"}
    assert link == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call_delegate",
        "_meta": {"hermes": {"session": {"sessionId": "child_1"}}},
    }
    (ended,) = event_updates(EVENTS[24], live=False)
    assert ended["state"]["state"] == "idle" and ended["state"]["stopReason"] == "end_turn"
    (compacted,) = event_updates(EVENTS[25], live=False)
    assert compacted["sessionUpdate"] == "compaction_update" and compacted["status"] == "completed"
    assert compacted["summary"][0]["text"].startswith("We fixed the parser.")


LIVE: list[LiveUpdate] = [
    LiveTextChunk("a1", "Hel"),
    LiveThoughtChunk("a1", "Hm"),
    LiveToolProgress("call_edit"),
    LiveToolProgress("call_edit", [TextBlock(text="half way"), DiffBlock(path="/w/a", old_text="x", new_text="y")]),
    LiveTerminalOutput("call_run", "call_run", "line\n", [TextBlock(text="line")]),
    LiveCompaction("c1", "in_progress"),
    LiveCompaction("c1", "failed", "the model refused"),
    LiveCompactionChunk("c1", "Goal: "),
    LiveUsage(used=1200, size=128_000, cost=Cost(0.01)),
    LiveUsage(used=1200, size=128_000),
    LiveSubagentState("child_1", "requires_action"),
]


@pytest.mark.parametrize("update", LIVE, ids=lambda u: type(u).__name__)
def test_every_live_update_renders_as_valid_v2(update: LiveUpdate) -> None:
    rendered = live_update(update)
    assert rendered is not None
    valid([rendered])


def test_a_notice_is_a_notice() -> None:
    assert valid([notice(Notice("warning", "MCP server x did not start", "exit 1"))]) == [
        {
            "sessionUpdate": "notice",
            "severity": "warning",
            "title": "MCP server x did not start",
            "description": "exit 1",
        }
    ]


def test_live_equals_replay_except_where_v2_says_otherwise() -> None:
    """Live and replayed frames differ only for checkpoints (streamed live), a turn's end (one snapshot after a
    replay), an ended terminal's kept output (a snapshot on a replay) and the cancels a replay never offers."""
    differs = {2, 10, 26, 29}
    started = {index for index, event in enumerate(EVENTS) if isinstance(event, ToolCallStarted)}
    for index, event in enumerate(EVENTS):
        same = event_updates(event, live=True, features=CANCELS) == event_updates(event, live=False, features=CANCELS)
        assert same == (index not in differs | started), (index, event.kind)
    for index, event in enumerate(EVENTS):
        same = event_updates(event, live=True) == event_updates(event, live=False)
        assert same == (index not in differs), (index, event.kind)


def _ids(updates: list[dict[str, Any]], key: str) -> list[str]:
    return [u[key] for u in updates if key in u]


def test_v1_and_v2_renderings_of_one_log_name_the_same_messages_and_calls() -> None:
    v1 = [
        u for s in LOG for u in convert.event_updates(s.event, live=False, plans=True, subagents=True, compaction=True)
    ]
    v2 = [u for _, u in replay_updates(LOG)]
    valid(v1, version=1)
    valid(v2)
    v1_messages = set(_ids(v1, "messageId"))
    v2_messages = {m.removesuffix(":thought") for m in _ids(v2, "messageId")}
    assert v2_messages == v1_messages
    assert set(_ids(v2, "toolCallId")) == set(_ids(v1, "toolCallId"))
    v1_titles = {u["toolCallId"]: u["title"] for u in v1 if "title" in u and "toolCallId" in u}
    v2_titles = {u["toolCallId"]: u["title"] for u in v2 if "title" in u and "toolCallId" in u}
    assert v2_titles == v1_titles
    assert {u["sessionUpdate"] for u in v1} & {"tool_call", "plan", "current_mode_update"} == {"tool_call"}
    assert not {u["sessionUpdate"] for u in v2} - UPDATE_KINDS


def test_a_resume_replays_the_history_with_no_idle_then_one_snapshot() -> None:
    replay = replay_updates(LOG)
    assert [seq for seq, _ in replay] == sorted(seq for seq, _ in replay)
    assert {seq for seq, _ in replay} <= {s.seq for s in LOG}
    assert all(u["sessionUpdate"] != "state_update" for _, u in replay), "a replayed idle counts as a completion"
    snapshot = resume_state(LOG)
    assert valid([snapshot]) == [{"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}]
    assert resume_state(LOG, "requires_action") == {"sessionUpdate": "state_update", "state": "requires_action"}
    assert resume_state([]) == {"sessionUpdate": "state_update", "state": "idle"}


def test_a_terminal_that_never_ran_is_opened_then_closed_without_a_reference() -> None:
    refused = AgentTerminalBlock(terminal_id="call_x", command="rm -rf /", cwd="/w", ended=True)
    settled = ToolCallSettled(turn_id="t", tool_call_id="call_x", status="failed", content=[refused], result=None)
    updates = valid(event_updates(settled, live=True))
    assert updates[0] == {"sessionUpdate": "terminal_update", "terminalId": "call_x", "exitStatus": {}}
    assert updates[1]["content"] == []
    assert TERMINAL_OPEN.ran and TERMINAL_DONE.ran
    started = ToolCallStarted(turn_id="t", tool_call_id="c", name="n", title="T", tool_kind="other")
    assert valid(event_updates(started, live=True)) == [
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c",
            "name": "n",
            "title": "T",
            "kind": "other",
            "status": "pending",
        }
    ]
    assert (
        event_updates(PermissionResolved(turn_id="t", tool_call_id="c", outcome="cancelled", scope="x"), live=True)
        == []
    )


@pytest.mark.parametrize("line", [0, 1, 29, 48, 49])
def test_the_patch_of_an_edit_deep_in_a_long_file_is_the_one_difflib_writes_for_the_whole_file(line: int) -> None:
    old = [f"line {i}\n" if i % 3 else "\n" for i in range(50)]
    new = [*old[:line], "changed\n", *old[line + 1 :]]
    patch = git_patch(DiffBlock(path="/w/long.py", old_text="".join(old), new_text="".join(new)))
    whole = difflib.unified_diff(old, new, "/w/long.py", "/w/long.py")
    assert patch == "diff --git /w/long.py /w/long.py\n" + "".join(whole)
