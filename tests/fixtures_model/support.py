"""Helpers for the model server tests: a raw httpx client and an SSE splitter. Not a test module."""

from __future__ import annotations

import json
from typing import Any

import httpx

from fixtures.model_server import ModelServer


def client_for(server: ModelServer) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.base_url, timeout=httpx.Timeout(10.0), trust_env=False)


def split_sse(body: str) -> list[tuple[str | None, Any]]:
    """(event name or None, parsed data) for each event; ``[DONE]`` stays a string."""
    events: list[tuple[str | None, Any]] = []
    for block in body.split("\n\n"):
        if not block.strip():
            continue
        name: str | None = None
        data: list[str] = []
        for line in block.split("\n"):
            field, _, value = line.partition(": ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        text = "\n".join(data)
        events.append((name, text if text == "[DONE]" else json.loads(text)))
    return events


def openai_request(text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], "stream": True, **extra}


def anthropic_request(text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
        "stream": True,
        **extra,
    }
