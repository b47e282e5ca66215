"""Bad input gets the right JSON-RPC error with a message that names the problem, and the server keeps serving
(docs/architecture.md §4.9)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes_acp.providers.scripted import ScriptedProvider, text_reply
from tests.fakes.server import RawPair, open_raw

pytestmark = pytest.mark.anyio
TMP = "<tmp_path>"
"""Stands for the test's own temporary folder in the parameters below (a real, absolute directory)."""


def _in(tmp_path: Path, params: dict[str, Any]) -> dict[str, Any]:
    return {k: str(tmp_path) if v == TMP else v for k, v in params.items()}


async def _initialize(raw: RawPair) -> None:
    await raw.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
    await raw.response(0)


async def _new_session(raw: RawPair, cwd: Path, request_id: int = 100) -> str:
    await raw.send(
        {"jsonrpc": "2.0", "id": request_id, "method": "session/new", "params": {"cwd": str(cwd), "mcpServers": []}}
    )
    session_id = (await raw.response(request_id))["result"]["sessionId"]
    assert isinstance(session_id, str)
    return session_id


async def test_malformed_json_gets_parse_error_and_the_server_keeps_serving(tmp_path: Path) -> None:
    async with open_raw(tmp_path) as raw:
        await _initialize(raw)
        await raw.send(b'{"jsonrpc": "2.0", "id": 5, "method": \n')
        error = await raw.receive()
        session_id = await _new_session(raw, tmp_path)
    assert error["id"] is None
    assert error["error"]["code"] == -32700
    assert error["error"]["message"].startswith("Parse error")
    assert session_id


@pytest.mark.parametrize(
    ("frame", "needle"),
    [
        ([{"jsonrpc": "2.0", "id": 1, "method": "session/list"}], "batch"),
        ("just a string", "object"),
        ({"id": 3, "method": "session/list", "params": {}}, "jsonrpc"),
        ({"jsonrpc": "2.0", "id": 4, "method": 7}, "method"),
        ({"jsonrpc": "2.0", "id": {"x": 1}, "method": "session/list"}, "id"),
        ({"jsonrpc": "2.0", "params": {}}, "method"),
        ({"jsonrpc": "2.0", "id": 6, "method": "session/list", "params": 3}, "params"),
    ],
)
async def test_invalid_envelopes_get_invalid_request(tmp_path: Path, frame: Any, needle: str) -> None:
    async with open_raw(tmp_path) as raw:
        await _initialize(raw)
        await raw.send(frame)
        error = await raw.receive()
        await raw.send({"jsonrpc": "2.0", "id": 7, "method": "session/list", "params": {}})
        still_serving = await raw.response(7)
    assert error["error"]["code"] == -32600
    assert needle in error["error"]["message"]
    assert "result" in still_serving


async def test_unknown_method_gets_method_not_found_naming_it(tmp_path: Path) -> None:
    async with open_raw(tmp_path) as raw:
        await _initialize(raw)
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": "session/teleport", "params": {}})
        error = await raw.response(1)
    assert error["error"]["code"] == -32601
    assert "session/teleport" in error["error"]["message"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"mcpServers": []}, "cwd"),
        ({"cwd": "relative/dir", "mcpServers": []}, "cwd"),
        ({"cwd": 42, "mcpServers": []}, "cwd"),
        ({"cwd": TMP}, "mcpServers"),
        ({"cwd": TMP, "mcpServers": [], "additionalDirectories": ["rel"]}, "additionalDirectories"),
    ],
)
async def test_invalid_params_name_the_field(tmp_path: Path, params: dict[str, Any], field: str) -> None:
    async with open_raw(tmp_path) as raw:
        await _initialize(raw)
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": _in(tmp_path, params)})
        error = await raw.response(1)
    assert error["error"]["code"] == -32602
    assert field in error["error"]["message"]


SESSION_METHODS: list[tuple[str, dict[str, Any]]] = [
    ("session/load", {"cwd": TMP, "mcpServers": []}),
    ("session/resume", {"cwd": TMP, "mcpServers": []}),
    ("session/fork", {"cwd": TMP, "mcpServers": []}),
    ("session/close", {}),
    ("session/delete", {}),
    ("session/prompt", {"prompt": [{"type": "text", "text": "hi"}]}),
    ("session/set_mode", {"modeId": "default"}),
    ("session/set_model", {"modelId": "scripted:model"}),
    ("session/set_config_option", {"configId": "mode", "value": "default"}),
]


@pytest.mark.parametrize(("method", "params"), SESSION_METHODS, ids=[m for m, _ in SESSION_METHODS])
async def test_unknown_session_is_resource_not_found_naming_the_id(
    tmp_path: Path, method: str, params: dict[str, Any]
) -> None:
    async with open_raw(tmp_path, provider=ScriptedProvider()) as raw:
        await _initialize(raw)
        params = {**_in(tmp_path, params), "sessionId": "ghost-42"}
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        error = await raw.response(1)
    assert error["error"]["code"] == -32002, error
    assert "ghost-42" in error["error"]["message"]


async def test_cancel_of_unknown_session_is_ignored_and_other_sessions_keep_working(tmp_path: Path) -> None:
    async with open_raw(tmp_path, provider=ScriptedProvider([text_reply("still here")])) as raw:
        await _initialize(raw)
        session_id = await _new_session(raw, tmp_path)
        await raw.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "ghost"}})
        await raw.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/prompt",
                "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "are you there?"}]},
            }
        )
        response = await raw.response(2)
    assert response["result"]["stopReason"] == "end_turn"


async def test_unknown_mode_lists_the_valid_ids_and_unknown_model_suggests(tmp_path: Path) -> None:
    async with open_raw(tmp_path, provider=ScriptedProvider()) as raw:
        await _initialize(raw)
        session_id = await _new_session(raw, tmp_path)
        await raw.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "session/set_mode",
                "params": {"sessionId": session_id, "modeId": "yolo"},
            }
        )
        mode_error = await raw.response(1)
        await raw.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/set_model",
                "params": {"sessionId": session_id, "modelId": "scripted:modle"},
            }
        )
        model_error = await raw.response(2)
    assert mode_error["error"]["code"] == -32602
    assert all(m in mode_error["error"]["message"] for m in ("default", "accept_edits", "dont_ask", "read_only"))
    assert model_error["error"]["code"] == -32602
    assert "scripted:model" in model_error["error"]["message"]


async def test_prompt_without_any_provider_answers_auth_required_naming_what_to_set(tmp_path: Path) -> None:
    async with open_raw(tmp_path) as raw:
        await _initialize(raw)
        session_id = await _new_session(raw, tmp_path)
        await raw.send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/prompt",
                "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]},
            }
        )
        error = await raw.response(3)
    assert error["error"]["code"] == -32000
    assert "HERMES_ACP_BASE_URL" in error["error"]["message"]
    assert "--setup" in error["error"]["message"]


async def test_deep_nesting_is_refused_before_decoding_and_the_server_keeps_serving(tmp_path: Path) -> None:
    async with open_raw(tmp_path) as raw:
        await _initialize(raw)
        await raw.send(
            b'{"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {"x": '
            + b"[" * 1000
            + b"]" * 1000
            + b"}}\n"
        )
        refused = await raw.receive()
        await raw.send(b"[" * 100_000 + b"\n")
        unbalanced = await raw.receive()
        shallow = {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {"_meta": {"x": [[[[1]]]]}}}
        await raw.send(shallow)
        still_serving = await raw.response(2)
    assert refused["error"]["code"] == -32600
    assert "nested 1002 levels deep" in refused["error"]["message"]
    assert unbalanced["error"]["code"] == -32600
    assert still_serving["result"] == {"sessions": []}


async def test_params_the_schema_lets_a_client_omit_may_be_omitted(tmp_path: Path) -> None:
    async with open_raw(tmp_path) as raw:
        await _initialize(raw)
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": "session/list"})
        listed = await raw.response(1)
        await raw.send({"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": None})
        with_null = await raw.response(2)
        await raw.send({"jsonrpc": "2.0", "id": 3, "method": "logout"})
        logged_out = await raw.response(3)
    assert listed["result"] == {"sessions": []}
    assert with_null["result"] == {"sessions": []}
    assert logged_out["result"] == {}


async def test_lone_surrogates_in_ids_methods_and_prompts_are_answered(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("read you")])
    async with open_raw(tmp_path, provider=provider) as raw:
        await _initialize(raw)
        await raw.send(b'{"jsonrpc": "2.0", "id": "x\\ud800", "method": "session/list", "params": {}}\n')
        by_id = await raw.receive()
        await raw.send(b'{"jsonrpc": "2.0", "id": 2, "method": "session/\\udfff", "params": {}}\n')
        by_method = await raw.response(2)
        session_id = await _new_session(raw, tmp_path)
        prompt = b'[{"type": "text", "text": "split \\ud83d emoji and a pair \\ud83d\\ude00"}]'
        await raw.send(
            b'{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "'
            + session_id.encode()
            + b'", "prompt": '
            + prompt
            + b"}}\n"
        )
        answered = await raw.response(3)
    assert by_id["id"] == "x\ud800", "the answer names the request exactly as the client wrote it"
    assert by_id["result"] == {"sessions": []}
    assert by_method["error"]["code"] == -32601
    assert answered["result"]["stopReason"] == "end_turn"
    sent = provider.requests[0].messages[-1].parts[0]
    assert getattr(sent, "text", None) == "split \ufffd emoji and a pair 😀"
