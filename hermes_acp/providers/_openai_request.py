"""Neutral messages → an OpenAI-compatible chat-completions request body (``stream: true``).

The dialect is the common subset that OpenAI, OpenRouter, vLLM, Ollama and LM Studio accept:

* the system prompt is the first message (``role: system``); it is omitted when empty;
* a user message whose parts are all text is sent as one string (parts joined by a blank line); with images it
  becomes a part list of ``text`` and ``image_url`` parts carrying ``data:<media type>;base64,…`` URLs;
* an assistant message sends its text as ``content`` (``null`` when it only calls tools) and its tool calls as
  ``tool_calls`` with the provider's ids. Arguments that are not a JSON object are sent as ``"{}"`` so one
  malformed call cannot make every later request of the session fail; the tool result already told the model
  what was wrong. An assistant message with neither text nor tool calls is left out, and so are the steps of
  tools a provider ran itself;
* reasoning goes back only on assistant messages that call tools (where the services that need it require it):
  ``reasoning_content`` (DeepSeek, Kimi, GLM: the reasoning as the stream sent it in that field),
  ``reasoning_details`` (OpenRouter, MiniMax: the details kept from the stream) and, on each tool call,
  ``extra_content`` (Gemini: the thought signature kept from the stream). Which of them: with ``send_back``
  unset, each one the stream carried; with ``send_back`` set, the fields it names (``reasoning_content`` then
  from the message's reasoning text when the stream used another field). The session's ``EchoRules`` come
  first: a field the server refused is never sent, one it demanded is sent on every such message (the
  reasoning text, or ``""`` for a message that has none). Chat completions has no portable field for reasoning,
  so nothing of it goes anywhere else;
* a tool result is a ``role: tool`` message with the text of the result. **Chat completions cannot carry
  images in tool messages**, so the images of a run of consecutive tool results follow that run as one user
  message, each group introduced by a line naming its tool call; the tool message says where its images are;
* tools are ``{"type": "function", "function": {name, description, parameters}}``;
* ``max_output_tokens`` goes out as ``max_tokens``, or as ``max_completion_tokens`` for OpenAI's own API
  (whose reasoning models reject ``max_tokens``), and only when it is known;
* the request's ``effort`` goes out as ``reasoning_effort``, and only when there is one.

This module is pure: no HTTP, no streaming.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from hermes_acp.config import SendBackField
from hermes_acp.core import (
    AssistantMessage,
    ImagePart,
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)

from .base import EchoRules, ProviderRequest, ToolSpec

__all__ = ["MaxTokensField", "SendBack", "build_chat_request", "sent_back_fields"]

MaxTokensField = Literal["max_tokens", "max_completion_tokens"]


def data_url(image: ImagePart) -> str:
    return f"data:{image.media_type};base64,{image.data}"


@dataclass(frozen=True, slots=True)
class SendBack:
    """Which reasoning fields go back: those ``send_back`` names (None: each one the stream carried), with the
    session's ``EchoRules`` over them."""

    named: frozenset[SendBackField] | None
    rules: EchoRules

    def sends(self, field: SendBackField) -> bool:
        if field in self.rules.force:
            return True
        return field not in self.rules.omit and (self.named is None or field in self.named)

    def from_reasoning(self, field: SendBackField) -> bool:
        """Whether ``field`` goes back even when the stream did not carry it (made from the reasoning text)."""
        return field in self.rules.force or (self.named is not None and field in self.named)


def build_chat_request(
    request: ProviderRequest,
    *,
    max_tokens_field: MaxTokensField = "max_tokens",
    default_max_tokens: int | None = None,
    send_back: Iterable[SendBackField] | None = (),
) -> dict[str, Any]:
    """The JSON body of ``POST {base_url}/chat/completions`` for ``request``; ``send_back`` None: automatic."""
    named = frozenset(send_back) if send_back is not None else None
    policy = SendBack(named, request.echo_rules or EchoRules())
    body: dict[str, Any] = {
        "model": request.model,
        "messages": _messages(request.system, request.messages, policy),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [_tool(spec) for spec in request.tools]
    max_tokens = request.max_output_tokens or default_max_tokens
    if max_tokens:
        body[max_tokens_field] = max_tokens
    if request.effort is not None:
        body["reasoning_effort"] = request.effort
    return body


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.input_schema},
    }


def sent_back_fields(body: dict[str, Any]) -> frozenset[SendBackField]:
    """The reasoning fields a request body carries on its assistant messages and their tool calls."""
    found: set[SendBackField] = set()
    for message in body.get("messages", []):
        if message.get("role") != "assistant":
            continue
        for field in ("reasoning_content", "reasoning_details"):
            if field in message:
                found.add(field)
        if any("extra_content" in call for call in message.get("tool_calls") or ()):
            found.add("extra_content")
    return frozenset(found)


def _messages(system: str, history: list[Message], send_back: SendBack) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    if system:
        wire.append({"role": "system", "content": system})
    pending_images: list[dict[str, Any]] = []
    for message in history:
        if pending_images and not isinstance(message, ToolResultMessage):
            wire.append({"role": "user", "content": pending_images})
            pending_images = []
        if isinstance(message, UserMessage):
            wire.append({"role": "user", "content": _user_content(message)})
        elif isinstance(message, AssistantMessage):
            assistant = _assistant(message, send_back)
            if assistant is not None:
                wire.append(assistant)
        else:
            tool_message, images = _tool_result(message)
            wire.append(tool_message)
            pending_images.extend(images)
    if pending_images:
        wire.append({"role": "user", "content": pending_images})
    return wire


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    if all(isinstance(part, TextPart) for part in message.parts):
        return "\n\n".join(part.text for part in message.parts if isinstance(part, TextPart))
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        else:
            content.append({"type": "image_url", "image_url": {"url": data_url(part)}})
    return content


def _assistant(message: AssistantMessage, send_back: SendBack) -> dict[str, Any] | None:
    text = message.text
    calls = message.tool_calls
    if not text and not calls:
        return None
    wire: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        wire["tool_calls"] = [_tool_call(call, send_back) for call in calls]
        echo = message.echo or {}
        if send_back.sends("reasoning_content"):
            reasoning = echo.get("reasoning_content")
            if not isinstance(reasoning, str) and send_back.from_reasoning("reasoning_content"):
                reasoning = "".join(p.text for p in message.parts if isinstance(p, ThinkingPart) and not p.redacted)
                if not reasoning and "reasoning_content" not in send_back.rules.force:
                    reasoning = None
            if isinstance(reasoning, str):
                wire["reasoning_content"] = reasoning
        details = echo.get("reasoning_details")
        if send_back.sends("reasoning_details") and details:
            wire["reasoning_details"] = details
    return wire


def _tool_call(call: ToolCallPart, send_back: SendBack) -> dict[str, Any]:
    arguments = call.arguments if call.parsed_arguments() is not None and call.arguments.strip() else "{}"
    wire: dict[str, Any] = {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}
    extra = (call.echo or {}).get("extra_content")
    if send_back.sends("extra_content") and extra:
        wire["extra_content"] = extra
    return wire


def _tool_result(message: ToolResultMessage) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    text = "\n".join(part.text for part in message.parts if isinstance(part, TextPart))
    images = [part for part in message.parts if isinstance(part, ImagePart)]
    carried: list[dict[str, Any]] = []
    if images:
        if len(images) == 1:
            note = "[The image of this result follows in the next user message.]"
        else:
            note = f"[The {len(images)} images of this result follow in the next user message.]"
        text = f"{text}\n{note}" if text else note
        carried.append(
            {"type": "text", "text": f"Images returned by tool call {message.tool_call_id} ({message.name}):"}
        )
        carried.extend({"type": "image_url", "image_url": {"url": data_url(image)}} for image in images)
    return {"role": "tool", "tool_call_id": message.tool_call_id, "content": text}, carried
