"""Decode an OpenAI-compatible chat-completions SSE stream into ``ProviderEvent``s.

Per chunk (``data: {...}``; the stream ends with ``data: [DONE]``):

* ``delta.content`` → ``TextDelta``; ``delta.refusal`` → ``TextDelta`` too, and the stop reason becomes
  ``refusal``; ``delta.reasoning_content`` (DeepSeek, vLLM, LM Studio) or else ``delta.reasoning``
  (OpenRouter, Ollama) → ``ThinkingDelta``;
* ``delta.tool_calls[]`` fragments are assembled by ``index``, keeping the provider's ``id`` ("" when it sends
  none). A fragment without ``index`` takes its position in the list; a fragment whose ``id`` differs from the
  id already at its index opens a new call (servers that send whole calls, each at index 0);
* with the model's ``think_tags`` set, ``<think>…</think>`` inside ``delta.content`` (R1-style models on servers
  without a reasoning parser) → ``ThinkingDelta``, the rest → ``TextDelta`` (``_think_tags.py``), tags split
  across chunks included;
* ``delta.executed_tools[]`` (Groq's built-in tools, run on Groq's side) → a ``ServerToolCallPart`` when an index
  first appears and a ``ServerToolResultPart`` when its ``output`` arrives; nothing of them goes back;
* what may go back is kept for the next request, whatever ``send_back`` says (it decides what is sent, and a
  server that demands a field gets it: ``echo.py``): ``delta.reasoning_content`` as it was sent (DeepSeek, Kimi,
  GLM; not ``delta.reasoning``) and
  ``delta.reasoning_details[]`` (OpenRouter, MiniMax; fragments merged by ``index``: texts, summaries, data and
  signatures joined) in the message's ``echo``, and ``tool_calls[].extra_content`` (Gemini's thought
  signatures) as the call's ``echo``. Nothing else is kept;
* ``usage`` (the final ``choices: []`` chunk that ``stream_options.include_usage`` asks for, or any chunk that
  carries it) → ``Usage`` with ``prompt_tokens_details.cached_tokens`` (or DeepSeek's
  ``prompt_cache_hit_tokens``) and ``completion_tokens_details.reasoning_tokens``;
* ``finish_reason``: stop → end_turn (tool_use when tool calls arrived, for servers such as Ollama that say
  "stop" there), tool_calls / function_call → tool_use, length → max_tokens, content_filter → refusal;
* ``{"error": {...}}`` inside the stream (OpenRouter) is mapped like an HTTP error of the same kind.

``ResponseDone`` goes out at ``[DONE]``, or when the body ends after a ``finish_reason``; a body that ends
before either is incomplete. This module knows no HTTP.
"""

from __future__ import annotations

import json
from typing import Any

from hermes_acp.core import Usage
from hermes_acp.core.ids import new_tool_call_id

from ._http_errors import ProviderIdentity, error_for_stream_event
from ._sse import SseMessage
from ._stream_decoder import JsonStreamDecoder, as_count, as_int, capped
from ._think_tags import ThinkTagSplitter
from .base import ModelStopReason, ProviderEvent, ResponseDone

__all__ = ["ChatCompletionsDecoder"]

_FINISH_REASONS: dict[str, ModelStopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def usage_from_openai(raw: dict[str, Any]) -> Usage:
    prompt_details = raw.get("prompt_tokens_details")
    prompt_details = prompt_details if isinstance(prompt_details, dict) else {}
    completion_details = raw.get("completion_tokens_details")
    completion_details = completion_details if isinstance(completion_details, dict) else {}
    return Usage(
        input_tokens=as_count(raw.get("prompt_tokens")),
        output_tokens=as_count(raw.get("completion_tokens")),
        cached_read_tokens=as_count(prompt_details.get("cached_tokens"))
        or as_count(raw.get("prompt_cache_hit_tokens")),
        cache_write_tokens=as_count(prompt_details.get("cache_write_tokens")),
        thought_tokens=as_count(completion_details.get("reasoning_tokens")),
    )


class ChatCompletionsDecoder(JsonStreamDecoder):
    """One response's decoder (see the module docstring)."""

    INCOMPLETE = "the stream ended before the response finished (no finish_reason, no [DONE])"

    def __init__(self, identity: ProviderIdentity, *, think_tags: bool = False) -> None:
        super().__init__(identity)
        self._keys: dict[int, tuple[int, int]] = {}
        self._finish_reason: str | None = None
        self._refused = False
        self._usage: Usage | None = None
        self._reasoning_content: list[str] = []
        """``delta.reasoning_content`` as the stream sent it."""
        self._think_tags = ThinkTagSplitter() if think_tags else None
        self._reasoning_details: dict[object, dict[str, Any]] = {}
        self._executed: dict[object, str] = {}
        """Groq's executed tools by index: the id given to the call; the result is added once."""
        self._executed_done: set[object] = set()

    def feed(self, message: SseMessage) -> list[ProviderEvent]:
        if message.data.startswith("[DONE]") and not self._done:
            return self._complete()
        return super().feed(message)

    def _event(self, payload: dict[str, Any], name: str) -> list[ProviderEvent]:
        error = payload.get("error")
        if error:
            raise error_for_stream_event(self._identity, error)
        usage = payload.get("usage")
        if isinstance(usage, dict):
            self._usage = usage_from_openai(usage)
        events: list[ProviderEvent] = []
        choices = payload.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            if not isinstance(choice, dict) or as_int(choice.get("index")) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                self._delta(delta, events)
            finish = choice.get("finish_reason")
            if isinstance(finish, str) and finish:
                self._finish_reason = finish
        return events

    def _stopped(self) -> bool:
        return self._finish_reason is not None

    def _delta(self, delta: dict[str, Any], events: list[ProviderEvent]) -> None:
        reasoning = delta.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            self._reasoning_content.append(reasoning)
        if not (isinstance(reasoning, str) and reasoning):
            reasoning = delta.get("reasoning")
        if isinstance(reasoning, str) and (thought := self._assembler.thinking(reasoning)):
            events.append(thought)
        details = delta.get("reasoning_details")
        if isinstance(details, list) and details:
            self._merge_reasoning_details(details)
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._content(content, events)
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self._refused = True
            if text := self._assembler.text(refusal):
                events.append(text)
        tool_calls = delta.get("tool_calls")
        for position, fragment in enumerate(tool_calls if isinstance(tool_calls, list) else []):
            if isinstance(fragment, dict):
                events.append(self._tool_fragment(position, fragment))
        executed = delta.get("executed_tools")
        for position, tool in enumerate(executed if isinstance(executed, list) else []):
            if isinstance(tool, dict):
                self._executed_tool(position, tool)

    def _content(self, content: str, events: list[ProviderEvent]) -> None:
        runs = self._think_tags.feed(content) if self._think_tags is not None else [("text", content)]
        for kind, text in runs:
            event = self._assembler.thinking(text) if kind == "thinking" else self._assembler.text(text)
            if event is not None:
                events.append(event)

    def _complete(self) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        if self._think_tags is not None:
            for kind, text in self._think_tags.flush():
                event = self._assembler.thinking(text) if kind == "thinking" else self._assembler.text(text)
                if event is not None:
                    events.append(event)
        if self._reasoning_content:
            self._assembler.echo("reasoning_content", "".join(self._reasoning_content))
        if self._reasoning_details:
            self._assembler.echo("reasoning_details", list(self._reasoning_details.values()))
        return [*events, *super()._complete()]

    def _merge_reasoning_details(self, details: list[Any]) -> None:
        """OpenRouter streams each reasoning detail in fragments sharing its ``index``: join them into one."""
        for detail in details:
            if not isinstance(detail, dict):
                continue
            index = detail.get("index")
            key: object = index if isinstance(index, int) else ("position", len(self._reasoning_details))
            merged = self._reasoning_details.setdefault(key, {})
            for name, value in detail.items():
                old = merged.get(name)
                if name in ("text", "summary", "data", "signature") and isinstance(value, str):
                    merged[name] = (old if isinstance(old, str) else "") + value
                elif old is None:
                    merged[name] = value

    def _executed_tool(self, position: int, tool: dict[str, Any]) -> None:
        index = tool.get("index")
        key: object = index if isinstance(index, int) else ("position", position)
        kind = tool.get("type")
        name = kind if isinstance(kind, str) and kind else "tool"
        call_id = self._executed.get(key)
        if call_id is None:
            call_id = new_tool_call_id()
            self._executed[key] = call_id
            arguments = tool.get("arguments")
            self._assembler.server_tool_call(
                ("executed", key),
                call_id=call_id,
                name=name,
                fallback_arguments=arguments if isinstance(arguments, str) and arguments else "{}",
            )
        output = tool.get("output")
        if isinstance(output, str) and key not in self._executed_done:
            self._executed_done.add(key)
            self._assembler.server_tool_result(tool_call_id=call_id, name=name, text=capped(output))

    def _tool_fragment(self, position: int, fragment: dict[str, Any]) -> ProviderEvent:
        index = fragment.get("index")
        wire_index = index if isinstance(index, int) and not isinstance(index, bool) else position
        call_id = fragment.get("id") if isinstance(fragment.get("id"), str) else None
        function = fragment.get("function")
        function = function if isinstance(function, dict) else {}
        name = function.get("name") if isinstance(function.get("name"), str) else None
        arguments = function.get("arguments")
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments)
        arguments = arguments if isinstance(arguments, str) else ""
        key = self._keys.get(wire_index)
        if key is not None and call_id and self._assembler.tool_call_id(key) not in ("", call_id):
            key = None
        if key is None:
            key = (wire_index, self._assembler.tool_call_count)
            self._keys[wire_index] = key
        extra = fragment.get("extra_content")
        echo = {"extra_content": extra} if isinstance(extra, dict) else None
        return self._assembler.tool_call(key, call_id=call_id, name=name, arguments=arguments, echo=echo)

    def _response_done(self) -> ResponseDone:
        message = self._assembler.build()
        reason = _FINISH_REASONS.get(self._finish_reason or "", "end_turn")
        if self._refused:
            reason = "refusal"
        elif message.tool_calls and reason == "end_turn":
            reason = "tool_use"
        return ResponseDone(message=message, stop_reason=reason, usage=self._usage)
