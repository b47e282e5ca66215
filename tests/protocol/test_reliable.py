"""Remote readiness (``protocol/reliable``): delivery cursors and the server epoch, a rejoin that gets exactly the
stored events after its cursor (from the SQLite store and its in-memory double alike), operations applied once,
and the ``_meta`` names they travel under."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from hermes_acp.core import (
    AssistantMessage,
    AssistantMessageStored,
    AssistantTextCheckpointed,
    Rewound,
    SessionEvent,
    TextBlock,
    TextPart,
    TurnEnded,
    UserMessage,
    UserPrompted,
)
from hermes_acp.errors import InvalidParamsError
from hermes_acp.jsonrpc.boundary import to_wire
from hermes_acp.protocol.reliable import meta
from hermes_acp.protocol.reliable.cursors import Epoch, plan_rejoin, rejoin
from hermes_acp.protocol.reliable.operations import OperationKey, OperationLedger, fingerprint
from hermes_acp.storage import InMemorySessionStore, SessionRecord, SqliteSessionStore, utc_now
from hermes_acp.storage.base import SessionStore
from tests.protocol.every_event import stored

pytestmark = pytest.mark.anyio
EPOCH = Epoch(id="e1", key=b"k" * 16)


def _turn(n: int) -> list[SessionEvent]:
    return [
        UserPrompted(
            turn_id=f"t{n}",
            message_id=f"u{n}",
            display=[TextBlock(text=f"q{n}")],
            message=UserMessage(parts=[TextPart(text=f"q{n}")]),
        ),
        AssistantMessageStored(
            turn_id=f"t{n}", message_id=f"a{n}", message=AssistantMessage(parts=[TextPart(text=f"a{n}")]), model_id="m"
        ),
        TurnEnded(turn_id=f"t{n}", stop_reason="end_turn"),
    ]


# -- cursors -----------------------------------------------------------------------------------------------------


def test_a_cursor_names_its_event_in_its_session_and_epoch() -> None:
    cursor = EPOCH.cursor("s1", 42)
    assert cursor.startswith("e1.42.")
    assert EPOCH.read(cursor, "s1") == 42
    assert Epoch(id="e1", key=b"k" * 16).cursor("s1", 42) == cursor, "the same epoch issues the same cursor"


def test_a_cursor_from_before_a_restart_is_refused_as_the_epoch_changed() -> None:
    restarted = Epoch.mint()
    assert restarted.id != EPOCH.id and restarted.id != Epoch.mint().id
    with pytest.raises(InvalidParamsError) as raised:
        restarted.read(EPOCH.cursor("s1", 3), "s1")
    wire = to_wire(raised.value, "session/resume")
    assert wire["code"] == -32602
    assert wire["data"] == {"condition": "server_epoch_changed", "retryable": False, "serverEpoch": restarted.id}


@pytest.mark.parametrize(
    "cursor",
    [
        EPOCH.cursor("s2", 3),  # another session's
        "e1.4." + EPOCH.cursor("s1", 3).split(".")[2],  # its seq edited
        Epoch(id="e1", key=b"x" * 16).cursor("s1", 3),  # not issued by this host
        "e1.3",
        "e1.x.abc",
        "",
        "e1." + "9" * 40 + ".abc",
    ],
    ids=["other session", "seq edited", "other key", "short", "not a number", "empty", "huge"],
)
def test_a_cursor_this_host_did_not_issue_for_the_session_is_a_gap(cursor: str) -> None:
    with pytest.raises(InvalidParamsError) as raised:
        EPOCH.read(cursor, "s1")
    assert raised.value.data["condition"] == "cursor_gap"


def test_a_rejoin_gets_the_events_after_its_cursor_and_drops_checkpoints_of_completed_messages() -> None:
    checkpoint = AssistantTextCheckpointed(turn_id="t9", message_id="a9", model_id="m", text="a")
    streaming = AssistantTextCheckpointed(turn_id="t9", message_id="a10", model_id="m", text="b")
    log = stored([*_turn(1), *_turn(2), checkpoint, *_turn(9)[1:], streaming])
    plan = plan_rejoin([s for s in log if s.seq > 3])
    assert plan.full is None
    kept = [s.event for s in plan.events]
    assert checkpoint not in kept, "its message completed after the cursor: the complete message shows it"
    assert streaming in kept, "its message still streams: the client gets what was stored of it"
    assert [s.seq for s in plan.events] == [4, 5, 6, 8, 9, 10]


def test_a_rewind_after_the_cursor_needs_the_whole_history() -> None:
    rewound = Rewound(turn_id="t3", message_id="r1", to_message_id="u2", text="Rewound.")
    plan = plan_rejoin(stored([*_turn(3), rewound], start=7))
    assert plan.events == [] and plan.full is not None and "rewind" in plan.full


@pytest.fixture(params=["sqlite", "memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    opened: SessionStore = (
        await SqliteSessionStore.open(tmp_path / "state.db") if request.param == "sqlite" else InMemorySessionStore()
    )
    now = utc_now()
    await opened.create_session(
        SessionRecord(id="s1", cwd=str(tmp_path), created_at=now, updated_at=now, mode_id="default")
    )
    await opened.create_session(
        SessionRecord(id="s2", cwd=str(tmp_path), created_at=now, updated_at=now, mode_id="default")
    )
    try:
        yield opened
    finally:
        await opened.aclose()


async def test_the_store_reads_only_the_events_after_a_seq(store: SessionStore) -> None:
    written = await store.append_events("s1", [e for n in range(40) for e in _turn(n)])
    await store.append_events("s2", _turn(99))
    assert [s.seq for s in await store.load_events("s1", after=100)] == list(range(101, 121))
    assert await store.load_events("s1", after=120) == []
    assert await store.load_events("s1") == written
    assert len(await store.load_events("s2", after=0)) == 3


async def test_a_rejoin_over_the_store_gets_exactly_what_was_missed(store: SessionStore) -> None:
    first = await store.append_events("s1", [e for n in range(3) for e in _turn(n)])
    seen = EPOCH.cursor("s1", first[-1].seq)
    missed = await store.append_events("s1", _turn(3))
    plan = await rejoin(store, EPOCH, "s1", seen)
    assert plan.full is None and plan.events == missed
    with pytest.raises(InvalidParamsError):
        await rejoin(store, EPOCH, "s2", seen)


# -- the operation ledger ---------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


KEY = OperationKey(scope="client-1", session_id="s1", operation_id="op-1")


async def test_a_repeated_operation_is_applied_once_and_answered_with_the_first_outcome() -> None:
    ledger = OperationLedger()
    applied: list[int] = []

    async def prompt() -> dict[str, str]:
        applied.append(1)
        return {"messageId": f"u{len(applied)}"}

    print_ = fingerprint("session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]})
    first = await ledger.apply(KEY, print_, prompt)
    again = await ledger.apply(KEY, print_, prompt)
    assert first == again == {"messageId": "u1"} and applied == [1]
    other = await ledger.apply(OperationKey("client-2", "s1", "op-1"), print_, prompt)
    assert other == {"messageId": "u2"}, "another client's ids are its own"


async def test_a_repeated_failure_is_the_same_error_and_runs_nothing() -> None:
    ledger = OperationLedger()
    runs: list[int] = []

    async def refused() -> None:
        runs.append(1)
        raise InvalidParamsError("prompt: must not be empty", field="prompt")

    for _ in range(2):
        with pytest.raises(InvalidParamsError, match="must not be empty"):
            await ledger.apply(KEY, "p", refused)
    assert runs == [1]


async def test_a_repeat_while_the_first_runs_waits_for_its_outcome() -> None:
    ledger = OperationLedger()
    release = anyio.Event()
    runs: list[int] = []
    answers: list[str] = []

    async def slow() -> str:
        runs.append(1)
        await release.wait()
        return "done"

    async def send() -> None:
        answers.append(await ledger.apply(KEY, "p", slow))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(send)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(send)
            await anyio.wait_all_tasks_blocked()
            assert answers == [] and runs == [1]
            release.set()
    assert answers == ["done", "done"] and runs == [1]


async def test_the_same_id_with_other_input_is_a_conflict_and_runs_nothing() -> None:
    ledger = OperationLedger()

    async def ok() -> str:
        return "ok"

    await ledger.apply(KEY, fingerprint("session/prompt", {"sessionId": "s1", "prompt": "a"}), ok)
    with pytest.raises(InvalidParamsError) as raised:
        await ledger.apply(KEY, fingerprint("session/prompt", {"sessionId": "s1", "prompt": "b"}), ok)
    assert raised.value.data == {"condition": "operation_conflict", "retryable": False, "operationId": "op-1"}


def test_the_fingerprint_leaves_out_meta_and_the_request_id() -> None:
    a = fingerprint("session/prompt", {"sessionId": "s", "prompt": [1], "_meta": {"hermes": {"operationId": "x"}}})
    b = fingerprint("session/prompt", {"prompt": [1], "sessionId": "s", "_meta": {"traceparent": "y"}})
    assert a == b
    assert a != fingerprint("session/cancel", {"sessionId": "s", "prompt": [1]})


async def test_an_operation_interrupted_before_it_finished_has_an_unknown_outcome() -> None:
    ledger = OperationLedger()
    started = anyio.Event()

    async def interrupted() -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"

    async def ok() -> str:
        return "ok"

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ledger.apply, KEY, "p", interrupted)
            await started.wait()
            tg.cancel_scope.cancel()
    with pytest.raises(InvalidParamsError) as raised:
        await ledger.apply(KEY, "p", ok)
    assert raised.value.data["condition"] == "operation_outcome_unknown"


async def test_the_ledger_is_bounded_per_session_in_time_and_in_sessions() -> None:
    clock = Clock()
    ledger = OperationLedger(per_session=3, sessions=2, retention_s=60, clock=clock)
    runs: list[str] = []

    def run(name: str) -> Callable[[], Awaitable[str]]:
        async def go() -> str:
            runs.append(name)
            return name

        return go

    for n in range(5):
        await ledger.apply(OperationKey("c", "s1", f"op{n}"), "p", run(f"op{n}"))
    assert len(ledger) == 3
    await ledger.apply(OperationKey("c", "s1", "op4"), "p", run("again"))
    assert runs[-1] == "op4", "kept: not run again"
    await ledger.apply(OperationKey("c", "s1", "op0"), "p", run("op0 again"))
    assert runs[-1] == "op0 again", "past the bound an id is forgotten (the advertised limit)"
    clock.now = 61
    await ledger.apply(OperationKey("c", "s1", "op4"), "p", run("op4 expired"))
    assert runs[-1] == "op4 expired"
    await ledger.apply(OperationKey("c", "s2", "x"), "p", run("s2"))
    await ledger.apply(OperationKey("c", "s3", "x"), "p", run("s3"))
    assert len(ledger) == 2, "the least recently used session went"
    await ledger.apply(OperationKey("c", "s3", "x"), "p", run("s3 again"))
    assert runs[-1] == "s3"


# -- meta ---------------------------------------------------------------------------------------------------------


def test_operation_ids_and_cursors_are_read_from_meta_hermes() -> None:
    params = {"sessionId": "s", "_meta": {"hermes": {"operationId": "op-1", "afterCursor": "e1.3.x"}}}
    assert meta.operation_id(params, epoch="e1") == "op-1"
    assert meta.after_cursor(params) == "e1.3.x"
    assert meta.operation_id({"sessionId": "s"}, epoch="e1") is None
    assert meta.client_instance_id({"_meta": {"hermes": {"clientInstanceId": "zed-7"}}}) == "zed-7"
    for bad in (7, "", "x" * 300):
        with pytest.raises(InvalidParamsError) as raised:
            meta.operation_id({"_meta": {"hermes": {"operationId": bad}}}, epoch="e1")
        assert raised.value.field == "_meta.hermes.operationId"


def test_an_operation_sent_to_an_earlier_epoch_is_refused_not_applied_again() -> None:
    params = {"_meta": {"hermes": {"operationId": "op-1", "serverEpoch": "old"}}}
    with pytest.raises(InvalidParamsError) as raised:
        meta.operation_id(params, epoch="new")
    assert raised.value.data["condition"] == "server_epoch_changed"
    assert (
        meta.operation_id({"_meta": {"hermes": {"operationId": "op-1", "serverEpoch": "new"}}}, epoch="new") == "op-1"
    )


def test_the_cursor_goes_on_the_params_not_on_the_update() -> None:
    update = {"sessionUpdate": "agent_message", "messageId": "a1"}
    assert meta.update_params("s", update, EPOCH.cursor("s", 5)) == {
        "sessionId": "s",
        "update": update,
        "_meta": {"hermes": {"cursor": EPOCH.cursor("s", 5)}},
    }
    assert meta.update_params("s", update) == {"sessionId": "s", "update": update}
    result = meta.with_result_meta(
        {"_meta": {"hermes": {"x": 1}}}, recovery="replay", operationReceipt=meta.receipt("op")
    )
    assert result == {
        "_meta": {
            "hermes": {
                "x": 1,
                "recovery": "replay",
                "operationReceipt": {"operationId": "op", "receiptRevision": "1", "status": "committed"},
            }
        }
    }
    assert meta.remote_advert("e1", retention_s=3600, per_session=256) == {
        "serverEpoch": "e1",
        "cursors": "session",
        "operations": {"retentionSeconds": "3600", "maximumPerSession": "256"},
    }
