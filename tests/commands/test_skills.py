"""Finding a session's skills: project and global folders and which wins, the front matter validated, a bad skill
skipped and reported once, a huge file, links out of a folder, rescans that re-read only what changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes_acp.commands.skills import MAX_SKILL_BYTES, SkillShelf, skill_roots, skill_text
from hermes_acp.tools.context import Workspace

pytestmark = pytest.mark.anyio


def write_skill(
    folder: Path, name: str, description: str = "Does a thing.", body: str = "Do it.", **extra: str
) -> Path:
    path = folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = "".join(f"{key}: {value}\n" for key, value in extra.items())
    path.write_text(f"---\nname: {name}\ndescription: {description}\n{fields}---\n{body}\n")
    return path


def shelf(cwd: Path, home: Path, *additional: Path) -> SkillShelf:
    return SkillShelf(skill_roots(Workspace(cwd=cwd, additional=additional), home))


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    cwd, home = tmp_path / "project", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    return cwd, home


async def test_project_skills_win_over_global_ones_and_agents_over_claude(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    write_skill(home / "skills", "deploy", "Global deploy.")
    write_skill(home / "skills", "notes", "Take notes.", body="Write notes.md.")
    write_skill(cwd / ".claude" / "skills", "deploy", "Claude deploy.")
    write_skill(cwd / ".agents" / "skills", "deploy", "Project deploy.", **{"argument-hint": "<environment>"})
    skills = shelf(cwd, home)
    await skills.ensure()

    found = {s.name: s for s in skills.skills}
    assert sorted(found) == ["deploy", "notes"]
    assert found["deploy"].description == "Project deploy."
    assert found["deploy"].hint == "<environment>"
    assert found["deploy"].origin == "project"
    assert found["notes"].origin == "global"
    assert found["notes"].body == "Write notes.md."
    assert skills.global_folders() == ((home / "skills" / "notes").resolve(),)
    assert skills.problems == ()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no front matter here", "it has no front matter"),
        ("---\nname: [unclosed\n---\n", "the front matter is not valid YAML"),
        ("---\n- a\n- b\n---\n", "the front matter is a YAML list, not a mapping"),
        ("---\ndescription: x\n---\n", "its front matter has no name"),
        ("---\nname: Bad_Name\ndescription: x\n---\n", "is not 1-64 lowercase letters"),
        ("---\nname: other\ndescription: x\n---\n", "its name 'other' is not its folder's name 'broken'"),
        ("---\nname: broken\n---\n", "its front matter has no description"),
        ("---\nname: broken\ndescription: '" + "x" * 1025 + "'\n---\n", "its description is 1,025 characters"),
        ("---\nname: broken\ndescription: " + "[" * 5000 + "\n---\n", "front matter"),
    ],
    ids=["none", "yaml", "list", "no-name", "bad-name", "other-name", "no-description", "long", "deep"],
)
async def test_a_bad_skill_is_skipped_with_why_and_reported_once(
    dirs: tuple[Path, Path], text: str, reason: str
) -> None:
    cwd, home = dirs
    bad = cwd / ".agents" / "skills" / "broken" / "SKILL.md"
    bad.parent.mkdir(parents=True)
    bad.write_text(text)
    write_skill(cwd / ".agents" / "skills", "good")
    skills = shelf(cwd, home)
    await skills.ensure()
    first = skills.new_problems()
    await skills.rescan()

    assert [s.name for s in skills.skills] == ["good"], "the others are still found"
    assert len(first) == 1
    assert first[0].path == bad.resolve()
    assert reason in first[0].reason
    assert skills.new_problems() == [], "reported once"
    assert skills.problems == tuple(first), "still listed (for /status)"


async def test_a_huge_skill_is_skipped_without_being_read(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    path = write_skill(cwd / ".agents" / "skills", "huge", body="x" * (MAX_SKILL_BYTES + 10))
    skills = shelf(cwd, home)
    await skills.ensure()

    (problem,) = skills.problems
    assert problem.path == path.resolve()
    assert f"skills are read up to {MAX_SKILL_BYTES:,}" in problem.reason
    assert skills.skills == ()


async def test_links_out_of_a_skills_folder_or_out_of_the_project_are_not_followed(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    cwd, home = dirs
    outside = tmp_path / "elsewhere"
    secret = write_skill(outside / "skills", "secret", "Reads your keys.")
    folder = cwd / ".agents" / "skills"
    folder.mkdir(parents=True)
    os.symlink(secret.parent, folder / "secret")  # a skill folder that is a link out of the skills folder
    other = tmp_path / "other-project"
    write_skill(other / ".claude" / "skills", "sneaky")
    (cwd / ".claude").mkdir()
    os.symlink(other / ".claude" / "skills", cwd / ".claude" / "skills")  # a skills folder that leaves the project
    skills = shelf(cwd, home)
    await skills.ensure()

    assert skills.skills == ()
    reasons = sorted((str(p.path), p.reason) for p in skills.problems)
    assert reasons == sorted(
        [
            (str(cwd / ".claude" / "skills"), f"it points outside {cwd}, so it is not read"),
            (str(folder / "secret" / "SKILL.md"), f"it points outside {folder}, so it is not read"),
        ]
    )


async def test_a_rescan_sees_new_changed_and_removed_skills(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    folder = cwd / ".agents" / "skills"
    write_skill(folder, "one", "First.")
    skills = shelf(cwd, home)
    await skills.ensure()
    write_skill(folder, "two", "Second.")
    path = write_skill(folder, "one", "First, changed.")
    os.utime(path, ns=(1, 1))  # a different time even on a coarse clock
    await skills.rescan()
    changed = {s.name: s.description for s in skills.skills}
    (folder / "two" / "SKILL.md").unlink()
    await skills.rescan()

    assert changed == {"one": "First, changed.", "two": "Second."}
    assert [s.name for s in skills.skills] == ["one"]


async def test_what_the_model_gets_names_the_folder_and_its_files(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    write_skill(home / "skills", "release", body="Follow checklist.md, then run scripts/tag.sh.")
    (home / "skills" / "release" / "checklist.md").write_text("1. Bump.\n")
    (home / "skills" / "release" / "scripts").mkdir()
    (home / "skills" / "release" / "scripts" / "tag.sh").write_text("git tag\n")
    skills = shelf(cwd, home)
    await skills.ensure()
    (skill,) = skills.skills
    text = skill_text(skill)

    folder = (home / "skills" / "release").resolve()
    assert text.startswith(f'Skill "release" ({folder / "SKILL.md"}). Paths in it are relative to {folder}')
    assert "Its folder holds: checklist.md, scripts/tag.sh\n" in text
    assert text.endswith("\n\nFollow checklist.md, then run scripts/tag.sh.")
