"""The slash commands and their runner against a fake ``CommandView`` (no session): a built-in command's reply stored
in one write inside a command turn of its own, a prompt file's and a skill's prompt handed back for a model turn,
the commands read again only when a stamp of their folders changed, and what is answered while the session works."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes_acp.commands.command_set import Ask, Invocation, Reply
from hermes_acp.commands.runner import BUSY_REWIND
from hermes_acp.core import DisplayBlock, NoticeAdded, TextBlock, TurnEnded, UserPrompted
from tests.commands.test_skills import write_skill

from .fake_view import FakeView, open_view

pytestmark = pytest.mark.anyio


def typed(text: str) -> list[DisplayBlock]:
    return [TextBlock(text=text)]


def found(view: FakeView, text: str) -> Invocation:
    invocation = view.commands.find(typed(text))
    assert invocation is not None, f"{text!r} names no command"
    return invocation


def prompt_file(view: FakeView, name: str, text: str) -> Path:
    folder = view.workspace.cwd / ".hermes" / "commands"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text)
    return path


async def test_a_built_in_reply_is_stored_in_one_write_as_a_turn_the_model_never_sees(tmp_path: Path) -> None:
    async with open_view(tmp_path) as view:
        outcome = await view.commands.run(found(view, "/title  Fix the login"), typed("/title  Fix the login"), "in_1")
        compacted = await view.commands.run(
            found(view, "/compact keep the plan"), typed("/compact keep the plan"), None
        )
        stored = await view.stored()

    assert isinstance(outcome, Reply)
    assert view.options.titles == ["Fix the login"]
    first, answer, end, second, compact_answer, compact_end = stored
    assert isinstance(first, UserPrompted) and not first.for_model and first.input_id == "in_1"
    assert isinstance(answer, NoticeAdded) and answer.text == "Session renamed to “Fix the login”."
    assert isinstance(end, TurnEnded) and end.turn_id == first.turn_id == answer.turn_id
    assert isinstance(second, UserPrompted) and isinstance(compact_answer, NoticeAdded)
    assert compact_answer.text == "compacted: keep the plan"
    assert view.wiring.compacted_in == [second.turn_id], "/compact runs inside its own command turn"
    assert isinstance(compact_end, TurnEnded) and compact_end.turn_id == second.turn_id != first.turn_id
    assert view.commands.turn_id is None, "the command turn is over"
    assert isinstance(compacted, Reply)


async def test_a_prompt_file_and_a_skill_come_back_as_the_prompt_of_a_model_turn(tmp_path: Path) -> None:
    async with open_view(tmp_path) as view:
        prompt_file(view, "fix", "---\ndescription: Fix an issue\n---\nFix issue $ARGUMENTS with a test.")
        write_skill(
            view.workspace.cwd / ".agents" / "skills", "deploy", "Deploy the app.", body="Deploy to $ARGUMENTS."
        )
        await view.commands.ensure()
        await view.commands.refresh()
        from_file = await view.commands.run(found(view, "/fix 42"), typed("/fix 42"), None)
        from_skill = await view.commands.run(found(view, "/deploy staging"), typed("/deploy staging"), None)
        stored = await view.stored()

    assert from_file == Ask("Fix issue 42 with a test.")
    assert isinstance(from_skill, Ask)
    assert from_skill.prompt.startswith('Use this skill for the request.\n\nSkill "deploy"')
    assert from_skill.prompt.endswith("Deploy to staging.")
    assert stored == [], "the model turn stores the prompt, not the runner"


async def test_the_commands_are_read_again_only_when_a_stamp_of_their_folders_changed(tmp_path: Path) -> None:
    async with open_view(tmp_path) as view:
        path = prompt_file(view, "standup", "# First summary\nList the commits.")
        await view.commands.refresh()
        before = os.stat(path)
        path.write_text("# Other summary\nList the commits.")  # the same size, in place: the same inode
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        await view.commands.refresh()
        kept = found(view, "/standup").command.description
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        await view.commands.refresh()
        read_again = found(view, "/standup").command.description
        await view.commands.refresh()

    assert kept == "First summary", "nothing in the stamp changed: the file was not read again"
    assert read_again == "Other summary"
    assert len(view.audience.announced) == 2, "told when the file came and when it changed; not for the refreshes"
    assert "standup" in view.audience.announced[0]


async def test_while_the_session_works_status_and_rewinds_are_answered_at_once(tmp_path: Path) -> None:
    async with open_view(tmp_path) as view:
        prompt_file(view, "rewind-notes", "Write notes.")
        await view.commands.refresh()
        refused = view.commands.at_once(typed("/rewind 2"))
        assert refused is not None
        await view.commands.answer_at_once(refused, typed("/rewind 2"))
        status = view.commands.at_once(typed("/status"))
        assert status is not None
        await view.commands.answer_at_once(status, typed("/status"))
        stored = await view.stored()
        others = [view.commands.at_once(typed(text)) for text in ("/help", "/rewind-notes", "hello /status")]

    answers = [event.text for event in stored if isinstance(event, NoticeAdded)]
    assert answers[0] == BUSY_REWIND
    assert answers[1].startswith("**Model:** scripted:model\n**Mode:** default")
    assert "**Queue:** empty" in answers[1]
    assert others == [None, None, None], "only /status, /rewind and /undo are answered without waiting"
