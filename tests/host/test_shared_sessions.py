"""Sessions that outlive the editor, through real processes: a session host (``hermes-acp host``) and front doors
(``hermes-acp --shared``) with the acp SDK's client on their stdio, against the scripted model server.

Two front doors on one session see the same live updates once and in order, and the second answers the permission
request; a front door killed mid-turn (an SSH link that drops) leaves the turn running, and the next one's
``session/load`` shows everything once, then the rest live; a question raised while nobody is attached reaches the
next connection that attaches; each connection's environment (keys, command variables) stays its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.model_server import key_fingerprint
from tests.fakes.acp_client import PermissionCall, RecordingClient
from tests.fakes.host_process import shared_home

pytestmark = pytest.mark.anyio

WAIT_S = 30.0


def _terminal(call_id: str, command: str) -> dict[str, Any]:
    return {"tool_call": {"id": call_id, "name": "terminal", "arguments": {"command": command}}}


ASKING = {
    "name": "asking",
    "responses": [
        {"match": {"last_message_contains": "please ask"}, "steps": [_terminal("call_ask", "echo shared-ok")]},
        {"match": {"last_message_contains": "shared-ok"}, "steps": [{"text": "All done."}]},
    ],
}


def _updates(client: RecordingClient, session_id: str) -> list[dict[str, Any]]:
    return [u for sid, u in client.updates if sid == session_id]


def _live_kinds(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a live turn shows, without what a connection gets when it attaches (commands, the meter)."""
    return [u for u in updates if u["sessionUpdate"] not in ("available_commands_update", "usage_update")]


def _titled(client: RecordingClient, session_id: str) -> bool:
    return any("title" in u for u in client.of_kind("session_info_update", session_id))


async def _never_answer(call: PermissionCall) -> str:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


async def test_two_front_doors_see_the_same_updates_once_and_the_second_answers_the_permission(
    tmp_path: Path,
) -> None:
    async with shared_home(tmp_path, ASKING) as shared:
        await shared.start_host()
        first_client = RecordingClient(on_permission=_never_answer)
        async with shared.front_door(first_client) as first, shared.front_door() as second:
            session = (await first.conn.new_session(cwd=str(shared.workspace), mcp_servers=[])).session_id
            second.client.answers = ["allow_once"]
            async with anyio.create_task_group() as group:
                answers: list[Any] = []

                async def prompt() -> None:
                    answers.append(await first.prompt(session, "please ask"))

                group.start_soon(prompt)
                await first_client.wait_for(lambda: bool(first_client.permissions), timeout=WAIT_S)
                before = len(_updates(first_client, session))
                await second.conn.load_session(session_id=session, cwd=str(shared.workspace), mcp_servers=[])
                attached = len(_updates(second.client, session))
                await second.client.wait_for(lambda: bool(second.client.permissions), timeout=WAIT_S)
            assert answers[0].stop_reason == "end_turn"
            # The title is written after the turn, off the prompt's path: it may arrive after the answer.
            await first_client.wait_for(lambda: _titled(first_client, session), timeout=WAIT_S)
            await second.client.wait_for(lambda: _titled(second.client, session), timeout=WAIT_S)
            # The second got the pending question after its catch-up, answered it; the first's was withdrawn.
            assert second.client.permissions[0].tool_call["toolCallId"] == "call_ask"
            mine = _live_kinds(_updates(first_client, session)[before:])
            theirs = _live_kinds(_updates(second.client, session)[attached:])
            assert mine == theirs
            assert [u["sessionUpdate"] for u in mine].count("tool_call_update") >= 2
            assert first_client.text(session) == "All done."
            assert second.client.text(session).endswith("All done.")


STREAMING = {
    "name": "long",
    "responses": [
        {
            "match": {"last_message_contains": "long job"},
            "steps": [
                {"text": "Starting."},
                _terminal("call_long", "for i in 1 2 3 4; do echo tick$i; sleep 0.3; done"),
            ],
        },
        {
            "match": {"last_message_contains": "tick4"},
            "chunk_size": 4,
            "chunk_delay_ms": 30,
            "steps": [{"text": "Finished the long job after four ticks."}],
        },
    ],
}


async def test_a_front_door_killed_mid_turn_leaves_the_turn_running_and_a_load_shows_everything_once(
    tmp_path: Path,
) -> None:
    async with shared_home(tmp_path, STREAMING) as shared:
        await shared.start_host()
        async with shared.front_door() as first:
            session = (await first.conn.new_session(cwd=str(shared.workspace), mcp_servers=[])).session_id
            await first.conn.set_session_mode(session_id=session, mode_id="dont_ask")
            async with anyio.create_task_group() as group:

                async def prompt() -> None:
                    await first.prompt(session, "run the long job")  # cancelled when its front door is killed

                group.start_soon(prompt)
                await first.client.wait_for(
                    lambda: any(u.get("status") == "in_progress" for u in first.client.of_kind("tool_call_update")),
                    timeout=WAIT_S,
                )
                first.kill()  # the SSH link drops while the command runs
                group.cancel_scope.cancel()
        async with shared.front_door() as second:
            await second.conn.load_session(session_id=session, cwd=str(shared.workspace), mcp_servers=[])
            final = "Finished the long job after four ticks."
            await second.client.wait_for(lambda: second.client.text(session).endswith(final), timeout=WAIT_S)
            assert second.client.text(session) == "Starting." + final
            card = second.client.cards(session)["call_long"]
            assert card["status"] == "completed"
        async with shared.front_door() as third:
            await third.conn.load_session(session_id=session, cwd=str(shared.workspace), mcp_servers=[])
            assert third.client.text(session) == "Starting." + final
            assert third.client.cards(session) == second.client.cards(session)


async def test_a_permission_asked_while_nobody_is_attached_goes_to_the_next_connection(tmp_path: Path) -> None:
    async with shared_home(tmp_path, ASKING) as shared:
        await shared.start_host()
        first_client = RecordingClient(on_permission=_never_answer)
        async with shared.front_door(first_client) as first:
            session = (await first.conn.new_session(cwd=str(shared.workspace), mcp_servers=[])).session_id
            async with anyio.create_task_group() as group:

                async def prompt() -> None:
                    await first.prompt(session, "please ask")  # cancelled when its front door is killed

                group.start_soon(prompt)
                await first_client.wait_for(lambda: bool(first_client.permissions), timeout=WAIT_S)
                first.kill()
                group.cancel_scope.cancel()
        # Nobody is attached now; the question waits for the next connection.
        async with shared.front_door(RecordingClient(answers=["allow_once"])) as second:
            await second.conn.load_session(session_id=session, cwd=str(shared.workspace), mcp_servers=[])
            await second.client.wait_for(lambda: second.client.text(session).endswith("All done."), timeout=WAIT_S)
            assert [p.tool_call["toolCallId"] for p in second.client.permissions] == ["call_ask"]
            assert second.client.cards(session)["call_ask"]["status"] == "completed"


ENVIRONMENTS = {
    "name": "environments",
    "responses": [
        {
            "match": {"last_message_contains": "show the token"},
            "steps": [_terminal("call_env", 'echo "token=$PROJECT_TOKEN other=${OTHER_SECRET:-none}"')],
            "repeat": True,
        },
        {"match": {"last_message_contains": "token="}, "steps": [{"text": "Shown."}], "repeat": True},
    ],
}


async def test_each_connection_s_environment_applies_to_its_own_sessions_only(tmp_path: Path) -> None:
    extra = '\n[sandbox]\npass_env = ["PROJECT_TOKEN"]\n'
    async with shared_home(tmp_path, ENVIRONMENTS, config_extra=extra) as shared:
        config = shared.home / "config.toml"
        config.write_text(config.read_text().replace('models = ["m"]', 'models = ["m"]\napi_key_env = "FX_KEY"'))
        await shared.start_host(env={"FX_KEY": "host-key", "PROJECT_TOKEN": "host"})
        env_a = {"FX_KEY": "key-of-a", "PROJECT_TOKEN": "alpha", "OTHER_SECRET": "a-secret"}
        env_b = {"FX_KEY": "key-of-b", "PROJECT_TOKEN": "beta", "OTHER_SECRET": "b-secret"}
        async with shared.front_door(env=env_a) as a, shared.front_door(env=env_b) as b:
            results = {}
            for door, name in ((a, "a"), (b, "b")):
                session = (await door.conn.new_session(cwd=str(shared.workspace), mcp_servers=[])).session_id
                await door.conn.set_session_mode(session_id=session, mode_id="dont_ask")
                await door.prompt(session, "show the token")
                results[name] = door.client.cards(session)["call_env"]
        outputs = {name: str(card.get("content")) for name, card in results.items()}
        assert "token=alpha other=none" in outputs["a"]
        assert "token=beta other=none" in outputs["b"]
        requests = [r for r in shared.model.requests() if r.method == "POST"]
        seen = [r.credentials["authorization"].sha256_prefix for r in requests]
        assert seen.count(key_fingerprint("key-of-a")) == 2
        assert seen.count(key_fingerprint("key-of-b")) == 2
        assert key_fingerprint("host-key") not in seen


async def test_a_prompt_from_one_connection_is_shown_to_the_others_attached(tmp_path: Path) -> None:
    async with shared_home(tmp_path) as shared:
        await shared.start_host()
        async with shared.front_door() as first, shared.front_door() as second:
            session = (await first.conn.new_session(cwd=str(shared.workspace), mcp_servers=[])).session_id
            await second.conn.resume_session(session_id=session, cwd=str(shared.workspace), mcp_servers=[])
            answer = await second.prompt(session, "asked from the second window")
            assert answer.stop_reason == "end_turn"
            await first.client.wait_for(lambda: first.client.text(session) == "Hello.", timeout=WAIT_S)
            assert first.client.text(session, kind="user_message_chunk") == "asked from the second window"
            assert second.client.text(session, kind="user_message_chunk") == "", "its own prompt is not echoed"
            assert second.client.text(session) == "Hello."


async def test_on_leave_cancel_stops_the_turns_of_the_connection_that_left(tmp_path: Path) -> None:
    async with shared_home(tmp_path, STREAMING, config_extra='\n[host]\non_leave = "cancel"\n') as shared:
        await shared.start_host()
        async with shared.front_door() as first:
            session = (await first.conn.new_session(cwd=str(shared.workspace), mcp_servers=[])).session_id
            await first.conn.set_session_mode(session_id=session, mode_id="dont_ask")
            async with anyio.create_task_group() as group:
                group.start_soon(first.prompt, session, "run the long job")  # cancelled when it is killed
                await first.client.wait_for(
                    lambda: any(u.get("status") == "in_progress" for u in first.client.of_kind("tool_call_update")),
                    timeout=WAIT_S,
                )
                first.kill()
                group.cancel_scope.cancel()
        async with shared.front_door() as second:
            await second.conn.load_session(session_id=session, cwd=str(shared.workspace), mcp_servers=[])
            await second.client.wait_for(
                lambda: second.client.cards(session).get("call_long", {}).get("status") == "failed", timeout=WAIT_S
            )
            assert "Finished" not in second.client.text(session)
