"""The bounds on what the agent passes on and takes in around questions to the user (``core/bounds.py``): a
permission question's input, texts and diffs, and the user's answer to ``ask_user``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes_acp.core import DiffBlock, DisplayBlock, TextBlock
from hermes_acp.core.bounds import MAX_ELICITATION_ANSWER_BYTES, MAX_PERMISSION_TEXT_CHARS, cut_json
from hermes_acp.errors import ToolError
from hermes_acp.tools.approval import Approval
from hermes_acp.tools.ask_user import AskUserTool
from hermes_acp.tools.context import ElicitationAnswer
from hermes_acp.turns.approvals import bounded_display
from tests.tools.helpers import context

pytestmark = pytest.mark.anyio


def test_a_permission_question_cuts_long_texts_and_names_large_diffs() -> None:
    long = "x" * (MAX_PERMISSION_TEXT_CHARS + 10)
    blocks: list[DisplayBlock] = [
        TextBlock(text="short"),
        TextBlock(text=long),
        DiffBlock(path="/w/big.txt", old_text=None, new_text=long),
        DiffBlock(path="/w/small.txt", old_text="a", new_text="b"),
    ]
    shown = bounded_display(blocks)
    assert shown[0] == blocks[0] and shown[3] == blocks[3]
    assert isinstance(shown[1], TextBlock) and shown[1].text.endswith("[10 more characters not shown]")
    assert isinstance(shown[2], TextBlock) and "big.txt" in shown[2].text and "too large" in shown[2].text
    assert sum(len(getattr(b, "text", "")) for b in shown) < 2 * MAX_PERMISSION_TEXT_CHARS


def test_a_permission_question_s_input_is_cut_to_its_bound() -> None:
    small = {"path": "a.txt", "content": "hi"}
    assert cut_json(small, 1000) is small
    big = {"path": "a.txt", "content": "y" * 100_000}
    cut = cut_json(big, MAX_PERMISSION_TEXT_CHARS)
    assert cut["path"] == "a.txt" and cut["content"].endswith("[98,000 more characters]")
    many = {"parts": ["z" * 1999] * 100}
    assert "_cut" in cut_json(many, 10_000), "strings each short, too many: a note of the size instead"


class _Answers:
    def __init__(self, content: dict[str, Any]):
        self.content = content

    async def ask(self, message: str, schema: dict[str, Any], *, tool_call_id: str | None) -> ElicitationAnswer:
        return ElicitationAnswer(action="accept", content=self.content)


async def test_an_answer_to_ask_user_over_its_bound_fails_the_call_saying_why(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    fine = AskUserTool(_Answers({"answer": "blue"}))
    outcome = await fine.run(fine.validate({"question": "Which colour?"}), Approval(ctx.tool_call_id), ctx)
    assert "The user answered: blue" in json.dumps([p.model_dump() for p in outcome.parts])
    huge = AskUserTool(_Answers({"answer": "w" * (MAX_ELICITATION_ANSWER_BYTES + 1)}))
    with pytest.raises(ToolError, match="over the limit of 65,536"):
        await huge.run(huge.validate({"question": "Tell me everything"}), Approval(ctx.tool_call_id), ctx)
