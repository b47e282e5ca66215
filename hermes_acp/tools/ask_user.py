"""``ask_user``: the model asks the user a question, with choices or free text, through the editor.

Offered only when the editor can ask (ACP ``elicitation/create`` in form mode, advertised as ``elicitation.form``):
the session builds the tool around its ``Elicitor``. The question is tied to the session and to the tool call that
asks it; the model gets the answer, or hears that the user declined or dismissed it. Asking changes nothing, so the
tool needs no approval and works in every mode. Both ways are bounded: the question and its choices by the input's
schema, the answer by ``MAX_ELICITATION_ANSWER_BYTES`` (a longer one fails the call, saying so).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hermes_acp.core.bounds import MAX_ELICITATION_ANSWER_BYTES
from hermes_acp.errors import ToolError

from .approval import Approval
from .base import Presentation, ToolOutcome, TypedTool
from .context import Elicitor, ToolContext

__all__ = ["AskUserTool"]


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, max_length=2000, description="The question, in plain words.")
    choices: list[str] | None = Field(
        None,
        min_length=2,
        max_length=20,
        description="Answers to choose from; leave out for a free-text answer.",
    )


class AskUserTool(TypedTool[_Input, dict[str, Any]]):
    name = "ask_user"
    description = (
        "Ask the user a question and wait for the answer: a choice among `choices`, or free text. Use it when you "
        "need a decision or a fact only the user has; do not use it for things you can find out yourself."
    )
    Input = _Input
    read_only = True

    def __init__(self, elicitor: Elicitor):
        self._elicitor = elicitor

    def present(self, parsed: _Input, ctx: ToolContext) -> Presentation:
        title = parsed.question if len(parsed.question) <= 80 else parsed.question[:79] + "…"
        return Presentation(title=f"Ask: {title}", kind="other")

    async def run(
        self, parsed: _Input, approval: Approval[dict[str, Any]], ctx: ToolContext
    ) -> ToolOutcome[dict[str, Any]]:
        answer_field: dict[str, Any] = {"type": "string", "title": "Answer"}
        if parsed.choices:
            answer_field["enum"] = list(dict.fromkeys(c[:200] for c in parsed.choices))
        schema = {"type": "object", "properties": {"answer": answer_field}, "required": ["answer"]}
        reply = await self._elicitor.ask(parsed.question, schema, tool_call_id=ctx.tool_call_id)
        if reply.action == "accept":
            content = reply.content or {}
            size = len(json.dumps(content, ensure_ascii=False, default=str))
            if size > MAX_ELICITATION_ANSWER_BYTES:
                raise ToolError(
                    f"the editor's answer is {size:,} characters, over the limit of {MAX_ELICITATION_ANSWER_BYTES:,}"
                    " for an answer; it was not read. Ask again for a shorter answer."
                )
            answer = content.get("answer")
            text = f"The user answered: {answer}" if answer not in (None, "") else "The user answered without text."
            return ToolOutcome.text(text, raw_output={"action": "accept", "content": content})
        if reply.action == "decline":
            return ToolOutcome.text("The user declined to answer.", raw_output={"action": "decline"})
        return ToolOutcome.text("The user dismissed the question without answering.", raw_output={"action": "cancel"})
