"""The command set: what a prompt must look like to be a command, which commands a session has (built-ins win over
prompt files, and say so once), and the thinking-effort choices a model offers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import structlog

from hermes_acp.commands.builtins import BUILT_INS
from hermes_acp.commands.command_set import Command, CommandSet, Invocation, parse_command
from hermes_acp.commands.prompt_files import PromptFile
from hermes_acp.core import DisplayBlock, ImageBlock, TextBlock
from hermes_acp.errors import InvalidParamsError
from hermes_acp.providers.effort import PROVIDER_DEFAULT, choose_effort, current_effort, effort_choices
from tests.fakes.server import scripted_model

BUILT_IN = [b.command for b in BUILT_INS]


def text(value: str) -> list[DisplayBlock]:
    return [TextBlock(text=value)]


def prompt_file(name: str, description: str = "A prompt.", hint: str | None = None) -> PromptFile:
    return PromptFile(name, description, hint, f"Do {name}: $ARGUMENTS", Path(f"/project/.hermes/commands/{name}.md"))


@pytest.mark.parametrize(
    ("prompt", "parsed"),
    [
        ("/review", ("review", "")),
        ("  /mode read_only  ", ("mode", "read_only")),
        ("/fix-issue 42\nand make it quick", ("fix-issue", "42\nand make it quick")),
        ("/release.notes\tv2", ("release.notes", "v2")),
        ("please /review", None),
        ("/", None),
        ("/usr/bin/env is a path", None),
        ("", None),
    ],
)
def test_a_command_is_one_text_block_that_starts_with_its_name(prompt: str, parsed: tuple[str, str] | None) -> None:
    assert parse_command(text(prompt)) == parsed


def test_a_prompt_with_more_than_text_is_never_a_command() -> None:
    image = ImageBlock(media_type="image/png", data="AAAA")
    assert parse_command([TextBlock(text="/review"), image]) is None
    assert parse_command([image]) is None


def test_built_ins_win_over_files_of_the_same_name_and_that_is_logged_once() -> None:
    files = [prompt_file("standup", "Summarise yesterday.", "<team>"), prompt_file("help"), prompt_file("deploy")]
    with structlog.testing.capture_logs() as logs:
        commands = CommandSet(BUILT_IN, files)
        rescanned = commands.with_files(files)
    assert [c.name for c in commands.listing] == [*(c.name for c in BUILT_IN), "deploy", "standup"]
    assert commands.listing[-1] == Command("standup", "Summarise yesterday.", "<team>")
    shadowed = [e for e in logs if e["event"].startswith("a prompt file or skill is named like another command")]
    assert [(e["name"], e["path"]) for e in shadowed] == [("help", "/project/.hermes/commands/help.md")]
    assert rescanned.listing == commands.listing
    help_call = commands.find(text("/help"))
    assert help_call == Invocation(BUILT_IN[0], "")
    standup = commands.find(text("/standup platform"))
    assert standup is not None and standup.file == files[0] and standup.argument == "platform"
    assert commands.find(text("/nope")) is None, "an unknown command goes to the model"


def test_help_lists_built_ins_then_prompt_files_with_their_hints() -> None:
    commands = CommandSet(BUILT_IN, [prompt_file("standup", "Summarise yesterday.", "<team>")])
    lines = commands.help_text(["Modes: …"]).splitlines()
    assert lines[0] == "Commands:"
    assert "- `/mode default | accept_edits | plan | dont_ask | read_only`: Show or switch the session mode." in lines
    assert lines[-2:] == ["- `/standup <team>`: Summarise yesterday.", "Modes: …"]


def test_a_model_offers_its_efforts_and_its_default_takes_over_for_a_choice_it_lacks() -> None:
    plain = scripted_model()
    with_default = replace(plain, efforts=("low", "medium", "high"), default_effort="medium")
    without_default = replace(plain, efforts=("low", "high"))
    assert effort_choices(plain) == ()
    assert effort_choices(with_default) == ("low", "medium", "high")
    assert effort_choices(without_default) == (PROVIDER_DEFAULT, "low", "high")
    assert current_effort(plain, "high") is None, "a model without efforts never gets one"
    assert current_effort(with_default, "high") == "high"
    assert current_effort(with_default, "xhigh") == "medium", "a choice the model lacks falls back to its default"
    assert current_effort(without_default, None) is None
    assert choose_effort(with_default, "low") == "low"
    assert choose_effort(without_default, PROVIDER_DEFAULT) is None
    with pytest.raises(InvalidParamsError, match=r"'default' is not a thinking effort of .*low, medium, high"):
        choose_effort(with_default, PROVIDER_DEFAULT)
    with pytest.raises(InvalidParamsError, match="has no thinking efforts"):
        choose_effort(plain, "low")
