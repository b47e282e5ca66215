"""Decode an Anthropic Messages API SSE stream into ``ProviderEvent``s.

Events: ``message_start`` (input usage), ``content_block_start`` / ``content_block_delta`` /
``content_block_stop`` per content block, ``message_delta`` (stop reason, output usage), ``message_stop``
(the end), ``ping`` (ignored) and ``error`` (mapped by its ``error.type``; ``overloaded_error``,
``api_error`` and ``rate_limit_error`` are transient). Unknown events and block types are ignored, as the
API's versioning policy asks.

Blocks: ``text`` (``text_delta`` → ``TextDelta``; ``citations_delta`` ignored), ``thinking``
(``thinking_delta`` → ``ThinkingDelta``, ``signature_delta`` kept in the part's signature),
``redacted_thinking`` (its ``data`` kept as the signature of a redacted ``ThinkingPart``), ``tool_use``
(``input_json_delta`` fragments → ``ToolCallDelta``; a call that streamed no input has ``{}``, or the ``input``
given at its start). Tools Anthropic runs itself: a ``server_tool_use`` (or other ``*_tool_use``) block becomes a
``ServerToolCallPart`` (its input from ``input_json_delta`` fragments), a ``*_tool_result`` block (web search,
tool search, code execution, …) a ``ServerToolResultPart`` with a short account of the result; both keep their
block, because Anthropic wants them back verbatim in later requests.

``ResponseDone`` goes out at ``message_stop``, or when the body ends after ``message_delta`` gave the stop
reason (the answer is complete); a body that ends before either is incomplete.

Usage: input_tokens reported to us = input + cache read + cache creation; cache reads and writes are kept
apart. Stop reasons: end_turn / stop_sequence → end_turn, tool_use, max_tokens / model_context_window_exceeded
→ max_tokens, refusal. ``pause_turn`` (Anthropic paused a long server-side turn) sets ``paused``: the provider
sends the request again with this response appended, and the model goes on (``_http.py``). This module knows no
HTTP.
"""

from __future__ import annotations

import json
from typing import Any

from hermes_acp.core import Usage

from ._http_errors import ProviderIdentity, error_for_stream_event
from ._stream_decoder import JsonStreamDecoder, as_count, capped
from .base import ModelStopReason, ProviderEvent, ResponseDone

__all__ = ["MessagesStreamDecoder"]

_STOP_REASONS: dict[str, ModelStopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "pause_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
_SUMMARY_LINES = 20


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class MessagesStreamDecoder(JsonStreamDecoder):
    """One response's decoder (see the module docstring)."""

    INCOMPLETE = "the stream ended before message_stop (the response is incomplete)"

    def __init__(self, identity: ProviderIdentity):
        super().__init__(identity)
        self._usage: dict[str, int] = {}
        self._stop_reason: str | None = None

    def _event(self, payload: dict[str, Any], name: str) -> list[ProviderEvent]:
        kind = payload.get("type") if isinstance(payload.get("type"), str) else name
        events: list[ProviderEvent] = []
        if kind == "message_start":
            self._merge_usage(_dict(_dict(payload.get("message")).get("usage")))
        elif kind == "content_block_start":
            self._block_start(payload.get("index"), _dict(payload.get("content_block")), events)
        elif kind == "content_block_delta":
            self._block_delta(payload.get("index"), _dict(payload.get("delta")), events)
        elif kind == "content_block_stop":
            self._assembler.end_run()
        elif kind == "message_delta":
            stop = _dict(payload.get("delta")).get("stop_reason")
            if isinstance(stop, str):
                self._stop_reason = stop
            self._merge_usage(_dict(payload.get("usage")))
        elif kind == "message_stop":
            return self._complete()
        elif kind == "error":
            raise error_for_stream_event(self._identity, payload.get("error"))
        return events

    def _stopped(self) -> bool:
        return self._stop_reason is not None

    @property
    def paused(self) -> bool:
        """Anthropic paused the turn (``pause_turn``): send the request again with this response to continue."""
        return self._done and self._stop_reason == "pause_turn"

    def _block_start(self, index: object, block: dict[str, Any], events: list[ProviderEvent]) -> None:
        self._assembler.end_run()
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str) and (delta := self._assembler.text(text)):
                events.append(delta)
        elif kind == "thinking":
            thinking = block.get("thinking")
            if isinstance(thinking, str) and (thought := self._assembler.thinking(thinking)):
                events.append(thought)
        elif kind == "redacted_thinking":
            data = block.get("data")
            self._assembler.redacted_thinking(data if isinstance(data, str) else "")
        elif kind == "tool_use":
            start_input = block.get("input")
            fallback = json.dumps(start_input) if isinstance(start_input, dict) and start_input else "{}"
            call_id = block.get("id")
            name = block.get("name")
            events.append(
                self._assembler.tool_call(
                    ("block", index),
                    call_id=call_id if isinstance(call_id, str) else None,
                    name=name if isinstance(name, str) else None,
                    fallback_arguments=fallback,
                )
            )
        elif isinstance(kind, str) and kind.endswith("_tool_use"):
            start_input = block.get("input")
            call_id = block.get("id")
            name = block.get("name")
            self._assembler.server_tool_call(
                ("block", index),
                call_id=call_id if isinstance(call_id, str) else "",
                name=name if isinstance(name, str) else kind,
                fallback_arguments=json.dumps(start_input) if isinstance(start_input, dict) and start_input else "{}",
                block={key: value for key, value in block.items() if key != "input"},
            )
        elif isinstance(kind, str) and kind.endswith("_tool_result"):
            tool_use_id = block.get("tool_use_id")
            content = block.get("content")
            self._assembler.server_tool_result(
                tool_call_id=tool_use_id if isinstance(tool_use_id, str) else "",
                name=kind,
                text=_result_summary(content),
                is_error=block.get("is_error") is True or _is_error(content),
                block=block,
            )

    def _block_delta(self, index: object, delta: dict[str, Any], events: list[ProviderEvent]) -> None:
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            if isinstance(text, str) and (event := self._assembler.text(text)):
                events.append(event)
        elif kind == "thinking_delta":
            thinking = delta.get("thinking")
            if isinstance(thinking, str) and (thought := self._assembler.thinking(thinking)):
                events.append(thought)
        elif kind == "signature_delta":
            signature = delta.get("signature")
            if isinstance(signature, str):
                self._assembler.sign_thinking(signature)
        elif kind == "input_json_delta":
            fragment = delta.get("partial_json")
            key = ("block", index)
            if not (isinstance(fragment, str) and fragment):
                return
            if self._assembler.has_tool_call(key):
                events.append(self._assembler.tool_call(key, arguments=fragment))
            elif self._assembler.has_server_tool_call(key):
                self._assembler.server_tool_arguments(key, fragment)

    def _merge_usage(self, usage: dict[str, Any]) -> None:
        for key in _USAGE_KEYS:
            if key in usage and usage[key] is not None:
                self._usage[key] = as_count(usage[key])

    def _response_done(self) -> ResponseDone:
        message = self._assembler.build()
        reason = _STOP_REASONS.get(self._stop_reason or "", "end_turn")
        if self._stop_reason is None and message.tool_calls:
            reason = "tool_use"
        usage = None
        if self._usage:
            cache_read = self._usage.get("cache_read_input_tokens", 0)
            cache_write = self._usage.get("cache_creation_input_tokens", 0)
            usage = Usage(
                input_tokens=self._usage.get("input_tokens", 0) + cache_read + cache_write,
                output_tokens=self._usage.get("output_tokens", 0),
                cached_read_tokens=cache_read,
                cache_write_tokens=cache_write,
            )
        return ResponseDone(message=message, stop_reason=reason, usage=usage)


def _is_error(content: object) -> bool:
    """A result whose content is an error object (``web_search_tool_result_error`` and the like)."""
    kind = content.get("type") if isinstance(content, dict) else None
    return isinstance(kind, str) and kind.endswith("_error")


def _result_summary(content: object) -> str:
    """A short account of a provider-side tool's result, for its card: titles and links, tool names, output, or
    the error code."""
    lines: list[str] = []

    def walk(item: object) -> None:
        if len(lines) >= _SUMMARY_LINES:
            return
        if isinstance(item, list):
            for entry in item:
                walk(entry)
        elif isinstance(item, dict):
            title, url = item.get("title"), item.get("url")
            if isinstance(url, str):
                lines.append(f"{title} — {url}" if isinstance(title, str) and title else url)
            elif isinstance(item.get("tool_name"), str):
                lines.append(f"tool: {item['tool_name']}")
            elif isinstance(item.get("error_code"), str):
                lines.append(f"error: {item['error_code']}")
            elif isinstance(item.get("text"), str):
                lines.append(item["text"])
            for key in ("stdout", "stderr"):
                if isinstance(item.get(key), str) and item[key]:
                    lines.append(item[key])
            for key in ("content", "tool_references"):
                if key in item:
                    walk(item[key])
        elif isinstance(item, str) and item:
            lines.append(item)

    walk(content)
    return capped("\n".join(lines[:_SUMMARY_LINES]))
