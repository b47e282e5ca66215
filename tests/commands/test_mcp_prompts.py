"""MCP prompts as ``/server:prompt`` commands: how they are named and listed, how what follows the name fills
their declared arguments, and what running one answers (the prompt's text as a model turn, or why not)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from hermes_acp.commands.command_set import Ask, Command, CommandSet, Reply
from hermes_acp.commands.mcp_prompts import arguments, run_prompt
from hermes_acp.core import TextBlock
from hermes_acp.errors import ToolError
from hermes_acp.mcp_client import PromptArgument, ServerPrompt

pytestmark = pytest.mark.anyio

REVIEW = ServerPrompt(
    "git hub",
    "review",
    "Review a pull request.",
    (PromptArgument("number", required=True), PromptArgument("focus")),
)
BARE = ServerPrompt("linear", "standup", "", ())


def test_a_prompt_is_a_command_named_after_its_server_with_its_arguments_as_the_hint() -> None:
    odd = ServerPrompt("linear", "a/b", "", ())
    commands = CommandSet([Command("help", "List.")], prompts=[REVIEW, BARE, odd, REVIEW])
    listed = {c.name: c for c in commands.listing}
    assert list(listed) == ["help", "git_hub:review", "linear:standup"], "a name with a slash cannot be typed"
    assert listed["git_hub:review"] == Command("git_hub:review", "Review a pull request.", "<number> [focus]")
    assert listed["linear:standup"].hint is None
    found = commands.find([TextBlock(text="/git_hub:review 42 tests")])
    assert found is not None and found.prompt is REVIEW and found.argument == "42 tests"
    assert "`/git_hub:review <number> [focus]`: Review a pull request." in commands.help_text()
    assert commands.with_files([]).prompts == commands.prompts, "a rescan of the files keeps the prompts"


@pytest.mark.parametrize(
    ("typed", "values"),
    [
        ("42", {"number": "42"}),
        ("42 the tests please", {"number": "42", "focus": "the tests please"}),
        ("focus=docs 7", {"number": "7", "focus": "docs"}),
        ('number=9 "two words"', {"number": "9", "focus": "two words"}),
        ("other=1 5", {"number": "other=1", "focus": "5"}),
    ],
)
def test_what_follows_the_name_fills_the_arguments_by_name_then_in_order(typed: str, values: dict[str, str]) -> None:
    assert arguments(REVIEW, typed) == values


@pytest.mark.parametrize(("prompt", "typed", "why"), [(REVIEW, "", "missing number"), (BARE, "x", "no arguments")])
def test_a_missing_argument_or_one_too_many_is_refused(prompt: ServerPrompt, typed: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        arguments(prompt, typed)


class Servers:
    def __init__(self, answer: str | Exception):
        self.answer = answer
        self.asked: list[tuple[str, str, dict[str, str]]] = []

    async def get_prompt(self, server: str, prompt: str, arguments: Mapping[str, str]) -> str:
        self.asked.append((server, prompt, dict(arguments)))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


async def test_running_a_prompt_makes_its_text_the_model_turn_or_says_why_not() -> None:
    servers = Servers("Review PR 42.")
    assert await run_prompt(servers, "git_hub:review", REVIEW, "42") == Ask("Review PR 42.")
    assert servers.asked == [("git hub", "review", {"number": "42"})]
    refused = await run_prompt(servers, "git_hub:review", REVIEW, "")
    assert refused == Reply("`/git_hub:review`: missing number. Usage: `/git_hub:review <number> [focus]`.")
    assert len(servers.asked) == 1, "nothing was asked of the server"
    failing = await run_prompt(Servers(ToolError("boom")), "git_hub:review", REVIEW, "1")
    assert isinstance(failing, Reply) and "did not give its prompt: boom" in failing.text
    gone = await run_prompt(Servers(KeyError("git hub")), "git_hub:review", REVIEW, "1")
    assert isinstance(gone, Reply) and "no longer in this session" in gone.text
    empty = await run_prompt(Servers("  "), "linear:standup", BARE, "")
    assert isinstance(empty, Reply) and "empty prompt" in empty.text
