"""The scripted server's behaviour: response selection, recording, control routes, cuts and holds."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from pydantic import ValidationError

from fixtures.model_server import Scenario, key_fingerprint, load_scenario, serve_model_server

from .support import anthropic_request, client_for, openai_request, split_sse

pytestmark = pytest.mark.anyio
REPO_ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = REPO_ROOT / "fixtures" / "model_server" / "scenarios"


def text_of_openai(response: httpx.Response) -> str:
    return "".join(
        data["choices"][0]["delta"].get("content") or ""
        for _, data in split_sse(response.text)
        if isinstance(data, dict) and data["choices"]
    )


async def test_responses_are_used_in_order_unless_a_match_rule_picks_one() -> None:
    scenario = {
        "responses": [
            {"match": {"last_message_contains": "exit code 0"}, "steps": [{"text": "after tool"}]},
            {"steps": [{"text": "first"}]},
            {"steps": [{"text": "second"}]},
        ]
    }
    tool_turn = {
        "model": "m",
        "stream": True,
        "messages": [
            {"role": "user", "content": "run it"},
            {"role": "assistant", "content": None, "tool_calls": []},
            {"role": "tool", "tool_call_id": "c", "content": "exit code 0"},
        ],
    }
    async with serve_model_server(scenario) as server, client_for(server) as client:
        first = await client.post("/v1/chat/completions", json=openai_request("hello"))
        matched = await client.post("/v1/chat/completions", json=tool_turn)
        second = await client.post("/v1/chat/completions", json=openai_request("again"))
        records = server.requests()

    assert [text_of_openai(r) for r in (first, matched, second)] == ["first", "after tool", "second"]
    assert [r.response_index for r in records] == [1, 0, 2]


async def test_match_rules_read_anthropic_tool_results_system_model_and_format() -> None:
    scenario = {
        "responses": [
            {"match": {"format": "openai"}, "steps": [{"text": "wrong"}]},
            {
                "match": {"last_message_contains": "42", "system_contains": "terse", "model": "claude"},
                "steps": [{"text": "right"}],
            },
        ]
    }
    body = anthropic_request(system=[{"type": "text", "text": "Be terse."}])
    body["messages"].append(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "answer: 42"}]}
    )
    async with serve_model_server(scenario) as server, client_for(server) as client:
        response = await client.post("/v1/messages", json=body)

    deltas = [d["delta"].get("text") for n, d in split_sse(response.text) if n == "content_block_delta"]
    assert deltas == ["right"]


async def test_repeat_answers_every_time_and_exhaustion_names_the_scenario() -> None:
    scenario = {
        "name": "tiny",
        "responses": [{"match": {"last_message_contains": "loop"}, "repeat": True, "steps": [{"text": "again"}]}],
    }
    async with serve_model_server(scenario) as server, client_for(server) as client:
        repeated = [await client.post("/v1/chat/completions", json=openai_request("loop")) for _ in range(3)]
        exhausted = await client.post("/v1/messages", json=anthropic_request("other"))
        records = server.requests()

    assert [text_of_openai(r) for r in repeated] == ["again"] * 3
    assert exhausted.status_code == 400
    error = exhausted.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert "scenario 'tiny' is exhausted: request #3 (POST /v1/messages)" in error["message"]
    assert records[-1].outcome == "exhausted"


async def test_requests_are_recorded_with_secrets_masked_and_timings(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    scenario = {"responses": [{"steps": [{"text": "a"}]}, {"steps": [{"text": "b"}]}]}
    async with serve_model_server(scenario, requests_log=log) as server, client_for(server) as client:
        headers = {"Authorization": "Bearer sk-one", "Cookie": "session=1"}
        await client.post("/v1/chat/completions", json=openai_request(), headers=headers)
        await client.post("/v1/messages", json=anthropic_request(), headers={"x-api-key": "sk-two"})
        listed = (await client.get("/_fixture/requests")).json()
        records = server.requests()

    openai_record, anthropic_record = records
    assert openai_record.headers["authorization"] == "***"
    assert openai_record.headers["cookie"] == "***"
    assert openai_record.credentials["authorization"].model_dump() == {
        "present": True,
        "sha256_prefix": key_fingerprint("sk-one"),
    }
    assert anthropic_record.credentials["x-api-key"].sha256_prefix == key_fingerprint("sk-two")
    assert anthropic_record.credentials["authorization"].present is False
    assert openai_record.body == openai_request()
    assert openai_record.wire_format == "openai"
    assert anthropic_record.wire_format == "anthropic"
    for record in records:
        assert record.first_token_monotonic is not None
        assert record.finished_monotonic is not None
        assert record.received_monotonic <= record.first_token_monotonic <= record.finished_monotonic
        assert record.content_chunks == 1
    assert listed == [record.model_dump(mode="json") for record in records]
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert logged == listed
    assert "sk-one" not in log.read_text()


async def test_the_scenario_can_be_replaced_at_run_time() -> None:
    async with serve_model_server({"responses": []}) as server, client_for(server) as client:
        bad = await client.post("/_fixture/scenario", json={"responses": [{"steps": [{"nonsense": 1}]}]})
        replaced = await client.post(
            "/_fixture/scenario", json={"name": "new", "responses": [{"steps": [{"text": "fresh"}]}]}
        )
        answer = await client.post("/v1/chat/completions", json=openai_request())

    assert bad.status_code == 400
    assert "invalid scenario" in bad.json()["error"]["message"]
    assert replaced.json() == {"ok": True, "name": "new", "responses": 1}
    assert text_of_openai(answer) == "fresh"


async def test_a_cut_stream_leaves_the_client_an_incomplete_body() -> None:
    scenario = {"responses": [{"steps": [{"text": "abcdefgh"}], "chunk_size": 2, "cut_after_chunks": 2}]}
    received: list[str] = []
    async with serve_model_server(scenario) as server, client_for(server) as client:

        async def read_all() -> None:
            async with client.stream("POST", "/v1/chat/completions", json=openai_request()) as response:
                async for line in response.aiter_lines():
                    received.append(line)

        with pytest.raises(httpx.RemoteProtocolError):
            await read_all()
        with anyio.fail_after(5):
            record = await server.wait_finished(0)

    contents = [json.loads(line[6:])["choices"][0]["delta"].get("content") for line in received if line]
    assert contents == ["", "ab", "cd"]
    assert record.outcome == "cut"
    assert record.content_chunks == 2


async def test_a_held_stream_stays_open_until_the_client_leaves() -> None:
    scenario = {"responses": [{"steps": [{"text": "abcdefgh"}], "chunk_size": 2, "hold_after_chunks": 1}]}
    async with serve_model_server(scenario) as server, client_for(server) as client:
        async with client.stream("POST", "/v1/messages", json=anthropic_request()) as response:
            lines = response.aiter_lines()
            with anyio.fail_after(5):
                async for line in lines:
                    if '"text_delta"' in line:
                        break
                assert not server.requests()[0].finished
        with anyio.fail_after(5):
            record = await server.wait_finished(0)

    assert record.outcome == "client_disconnected"
    assert record.content_chunks == 1


async def test_an_answer_held_for_another_request_starts_only_once_that_one_arrived() -> None:
    held = {"match": {"last_message_contains": "first"}, "steps": [{"text": "one"}]}
    scenario = {
        "responses": [
            {**held, "after_request": {"last_message_contains": "second"}},
            {"match": {"last_message_contains": "second"}, "steps": [{"text": "two"}]},
        ]
    }
    async with serve_model_server(scenario) as server, client_for(server) as client:
        async with anyio.create_task_group() as group:
            answers: dict[str, str] = {}

            async def ask(word: str) -> None:
                answers[word] = text_of_openai(await client.post("/v1/chat/completions", json=openai_request(word)))

            group.start_soon(ask, "first")
            with anyio.fail_after(5):
                received = await server.wait_received(0)
            assert not received.finished, "held while no second request came"
            group.start_soon(ask, "second")
        first, second = server.requests()

    assert answers == {"first": "one", "second": "two"}
    assert first.finished_monotonic is not None and second.received_monotonic < first.finished_monotonic


async def test_an_answer_held_for_a_request_that_never_comes_goes_out_after_the_wait() -> None:
    scenario = {
        "responses": [{"steps": [{"text": "alone"}], "after_request": {"model": "other"}, "after_request_wait_s": 0.05}]
    }
    async with serve_model_server(scenario) as server, client_for(server) as client:
        with anyio.fail_after(5):
            response = await client.post("/v1/chat/completions", json=openai_request("hi"))
        (record,) = server.requests()

    assert text_of_openai(response) == "alone"
    assert record.outcome == "completed" and record.finished_monotonic is not None
    assert record.finished_monotonic - record.received_monotonic >= 0.049, "it waited for the other request first"


async def test_unknown_routes_are_recorded_and_answered_404() -> None:
    async with serve_model_server({"responses": []}) as server, client_for(server) as client:
        response = await client.post("/v1/responses", json={})
        (record,) = server.requests()

    assert response.status_code == 404
    assert "no route for POST /v1/responses" in response.json()["error"]["message"]
    assert record.outcome == "not_found"


@pytest.mark.parametrize(
    "head",
    [
        "Content-Length: twelve\r\n\r\n",
        "Content-Length: -3\r\n\r\n",
        "Transfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
)
async def test_an_unreadable_request_gets_400_and_the_server_keeps_serving(head: str) -> None:
    async with serve_model_server({"responses": [{"steps": [{"text": "still here"}]}]}) as server:
        with anyio.fail_after(10):
            async with await anyio.connect_tcp("127.0.0.1", server.port) as raw:
                await raw.send(f"POST /v1/chat/completions HTTP/1.1\r\nHost: fixture\r\n{head}".encode())
                answer = b""
                with contextlib.suppress(anyio.EndOfStream):
                    while True:
                        answer += await raw.receive()
            async with client_for(server) as client:
                after = await client.post("/v1/chat/completions", json=openai_request())

    assert answer.startswith(b"HTTP/1.1 400 ")
    assert b"unreadable request" in answer
    assert text_of_openai(after) == "still here"


def test_scenario_validation_rejects_ambiguous_tool_arguments_and_unknown_steps() -> None:
    with pytest.raises(ValidationError, match="either arguments or arguments_raw"):
        load_scenario({"responses": [{"steps": [{"tool_call": {"name": "t", "arguments": {}, "arguments_raw": ""}}]}]})
    with pytest.raises(ValidationError):
        load_scenario({"responses": [{"steps": [{"speak": "hi"}]}]})
    with pytest.raises(ValidationError):
        load_scenario({"responses": [{"cut_after_chunks": -1}]})


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.json")), ids=lambda p: p.stem)
async def test_every_example_scenario_loads_and_plays_in_both_formats(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.name == path.stem
    assert scenario.responses

    replies: dict[str, list[int]] = {"openai": [], "anthropic": []}
    for wire_format, route, build in (
        ("openai", "/v1/chat/completions", openai_request),
        ("anthropic", "/v1/messages", anthropic_request),
    ):
        async with serve_model_server(path) as server, client_for(server) as client:
            for index, response in enumerate(scenario.responses):
                trigger = (response.match.last_message_contains if response.match else None) or f"turn {index}"
                reply = await client.post(route, json=build(trigger))
                replies[wire_format].append(reply.status_code)
                assert reply.text.rstrip().endswith(
                    "data: [DONE]" if wire_format == "openai" else 'data: {"type":"message_stop"}'
                )
            assert [r.response_index for r in server.requests()] == list(range(len(scenario.responses)))

    assert replies["openai"] == replies["anthropic"] == [200] * len(scenario.responses)


def test_a_scenario_file_without_a_name_is_named_after_the_file(tmp_path: Path) -> None:
    path = tmp_path / "my_case.json"
    path.write_text(json.dumps({"responses": [{"steps": [{"text": "x"}]}]}))

    assert load_scenario(path).name == "my_case"
    assert load_scenario(str(path)).name == "my_case"
    assert isinstance(load_scenario('{"name": "inline"}'), Scenario)


async def test_the_command_line_serves_a_scenario_and_writes_ready_and_log_files(tmp_path: Path) -> None:
    ready, log = tmp_path / "ready.json", tmp_path / "requests.jsonl"
    command = [
        sys.executable,
        "-m",
        "fixtures.model_server",
        "--scenario",
        str(SCENARIOS / "plain_text.json"),
        "--port",
        "0",
        "--ready-file",
        str(ready),
        "--requests-log",
        str(log),
    ]
    process = await anyio.open_process(command, cwd=REPO_ROOT)
    try:
        assert process.stdout is not None
        with anyio.fail_after(20):
            first_line = b""
            async for data in process.stdout:
                first_line += data
                if b"\n" in first_line:
                    break
        announced: dict[str, Any] = json.loads(first_line)
        assert json.loads(ready.read_text()) == announced
        async with httpx.AsyncClient(base_url=announced["base_url"], trust_env=False) as client:
            models = await client.get("/v1/models")
            answer = await client.post("/v1/chat/completions", json=openai_request())
    finally:
        process.terminate()
        with anyio.fail_after(10):
            await process.wait()
        await process.aclose()

    assert models.json()["data"][0]["id"] == "fixture-model"
    assert "scripted model" in text_of_openai(answer)
    assert process.returncode == 0
    assert [json.loads(line)["path"] for line in log.read_text().splitlines()] == [
        "/v1/models",
        "/v1/chat/completions",
    ]
