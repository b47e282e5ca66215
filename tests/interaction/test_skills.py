"""Skills over the wire: listed as commands after ``session/new`` (and again when they change), ``/name args``
runs one, the model sees the list in a byte-stable system prompt and loads one with ``load_skill``, the files of a
global skill are readable without a question, a bad skill is told once and ``/status`` lists them all."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from hermes_acp.core import TextPart, ToolCallPart, ToolResultMessage, UserMessage
from hermes_acp.providers.scripted import ScriptedProvider, text_reply, tool_reply
from tests.commands.test_skills import write_skill
from tests.fakes.server import Pair, open_pair
from tests.fakes.tools import args, call

pytestmark = pytest.mark.anyio


def commands(pair: Pair, session_id: str) -> list[list[str]]:
    return [
        [c["name"] for c in u["availableCommands"]]
        for u in pair.client.of_kind("available_commands_update", session_id)
    ]


def home_of(pair: Pair) -> Path:
    return pair.settings.home


async def test_skills_are_commands_and_a_slash_command_runs_one_with_its_arguments(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("Deployed to staging.")])
    async with open_pair(tmp_path, provider=provider) as pair:
        write_skill(pair.workspace / ".agents" / "skills", "deploy", "Deploy the app.", body="Deploy to $ARGUMENTS.")
        session_id = await pair.new_session()
        await pair.client.wait_for(lambda: bool(commands(pair, session_id)))
        listed = pair.client.of_kind("available_commands_update", session_id)[0]["availableCommands"]
        response = await pair.prompt(session_id, "/deploy staging")
        shown = pair.client.transcript(session_id)

    assert {"name": "deploy", "description": "Deploy the app."} in listed
    assert response.stop_reason == "end_turn"
    sent = provider.requests[0].messages[-1]
    assert isinstance(sent, UserMessage)
    text = "".join(p.text for p in sent.parts if isinstance(p, TextPart))
    assert text.startswith('Use this skill for the request.\n\nSkill "deploy"')
    assert text.endswith("Deploy to staging.")
    assert "Deployed to staging." in "".join(shown["messages"].values())


async def test_the_model_sees_the_skills_and_loads_one_then_reads_a_global_skills_file_without_asking(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider(
        [
            tool_reply(ToolCallPart(id="l1", name="load_skill", arguments=args(name="release"))),
            lambda request: tool_reply(call("r1", "read_file", path=str(_checklist(request)))),
            text_reply("Released."),
            text_reply("Again."),
        ]
    )
    async with open_pair(tmp_path, provider=provider) as pair:
        skill = write_skill(home_of(pair) / "skills", "release", "Cut a release.", body="Follow checklist.md.")
        (skill.parent / "checklist.md").write_text("1. Bump the version.\n")
        write_skill(pair.workspace / ".claude" / "skills", "lint", "Lint the code.")
        session_id = await pair.new_session()
        response = await pair.prompt(session_id, "cut a release")
        await pair.prompt(session_id, "again")  # a second turn: the same system prompt, byte for byte

    assert response.stop_reason == "end_turn"
    system = provider.requests[0].system
    assert system.endswith("a skill grants no permission):\n- lint: Lint the code.\n- release: Cut a release.")
    assert all(r.system == system for r in provider.requests)
    assert "load_skill" in [t.name for t in provider.requests[0].tools]
    loaded = _result(provider, 1, "l1")
    assert "Follow checklist.md." in loaded and "Its folder holds: checklist.md" in loaded
    assert _result(provider, 2, "r1").endswith("1. Bump the version.")
    assert pair.client.permissions == [], "a global skill's own files are read without asking"


def _checklist(request: object) -> Path:
    messages = getattr(request, "messages", [])
    loaded = next(m for m in messages if isinstance(m, ToolResultMessage))
    text = "".join(p.text for p in loaded.parts if isinstance(p, TextPart))
    folder = text.split("Paths in it are relative to ", 1)[1].split(";", 1)[0]
    return Path(folder) / "checklist.md"


def _result(provider: ScriptedProvider, request: int, call_id: str) -> str:
    results = [m for m in provider.requests[request].messages if isinstance(m, ToolResultMessage)]
    return "".join(p.text for r in results if r.tool_call_id == call_id for p in r.parts if isinstance(p, TextPart))


async def test_a_new_skill_is_listed_again_and_a_bad_one_is_told_once(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("One."), text_reply("Two.")])
    async with open_pair(tmp_path, provider=provider) as pair:
        folder = pair.workspace / ".agents" / "skills"
        write_skill(folder, "first")
        session_id = await pair.new_session()
        await pair.client.wait_for(lambda: bool(commands(pair, session_id)))
        write_skill(folder, "second")
        bad = folder / "broken" / "SKILL.md"
        bad.parent.mkdir()
        bad.write_text("no front matter")
        await pair.prompt(session_id, "hello")
        await pair.prompt(session_id, "hello again")
        with anyio.fail_after(5):
            status = await pair.prompt(session_id, "/status")
        listings = commands(pair, session_id)
        text = pair.client.text(session_id)

    assert status.stop_reason == "end_turn"
    assert "first" in listings[0] and "second" not in listings[0]
    assert "second" in listings[-1]
    told = f"⚠ Skill {bad.resolve()} was skipped: it has no front matter (a --- block with name and description)."
    assert text.count(told) == 1, "told once, at the first turn after it appeared"
    assert "- `/first` (project, " in text and "- skipped: " + told.removeprefix("⚠ ") in text
