"""The ACP Registry entry: ``registry/agent.json`` validates against the registry's schema, its icon is a 16×16
``currentColor`` SVG, and the versions of pyproject.toml, hermes_acp/version.py and agent.json agree; the release
check names each way they can go wrong (checked on copies of the tree, the real files are only read)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hermes_acp.version import __version__
from registry.release_check import ENTRY, ROOT, bump, icon_problems, problems

_FILES = (
    "pyproject.toml",
    "hermes_acp/version.py",
    "registry/agent.json",
    "registry/agent.schema.json",
    "registry/icon.svg",
)


def _copy(tmp_path: Path) -> Path:
    for relative in _FILES:
        target = tmp_path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / relative, target)
    return tmp_path


def test_the_entry_the_icon_and_the_versions_agree() -> None:
    assert problems() == []
    entry = json.loads((ROOT / ENTRY).read_text())
    assert entry["version"] == __version__
    assert entry["distribution"] == {"uvx": {"package": f"hermes-acp-server=={__version__}"}}


def test_a_version_out_of_step_is_named_in_each_file(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    module = root / "hermes_acp" / "version.py"
    module.write_text(module.read_text().replace(f'"{__version__}"', '"9.9.9"'))
    entry = json.loads((root / ENTRY).read_text())
    entry["distribution"]["uvx"]["package"] = "hermes-acp==0.2.4"
    (root / ENTRY).write_text(json.dumps(entry))
    found = problems(root)
    assert any("hermes_acp/version.py has __version__ '9.9.9'" in problem for problem in found)
    assert any("distribution.uvx.package is 'hermes-acp==0.2.4'" in problem for problem in found)


def test_an_entry_the_schema_rejects_is_named_with_its_place(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    entry = json.loads((root / ENTRY).read_text())
    entry["id"] = "Hermes ACP"
    entry["distribution"]["pip"] = {"package": "x"}
    (root / ENTRY).write_text(json.dumps(entry))
    found = problems(root)
    assert any(problem.startswith("registry/agent.json at id:") for problem in found)
    assert any("registry/agent.json at distribution:" in problem and "pip" in problem for problem in found)


def test_bump_writes_all_three_and_keeps_the_pyproject_comments(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    before = (root / "pyproject.toml").read_text()
    bump("1.2.3", root)
    after = (root / "pyproject.toml").read_text()
    assert problems(root) == []
    assert 'version = "1.2.3"' in after
    assert json.loads((root / ENTRY).read_text())["distribution"]["uvx"]["package"] == "hermes-acp-server==1.2.3"
    assert [line for line in before.splitlines() if line.lstrip().startswith("#")] == [
        line for line in after.splitlines() if line.lstrip().startswith("#")
    ]
    with pytest.raises(ValueError, match=r"MAJOR\.MINOR\.PATCH"):
        bump("1.2", root)


@pytest.mark.parametrize(
    ("svg", "problem"),
    [
        (
            '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path fill="currentColor" d="M0 0h1"/></svg>',
            "is 24×24, not 16×16",
        ),
        (
            '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><path fill="#ff0000" d="M0 0h1"/></svg>',
            "paints fill='#ff0000'",
        ),
        (
            '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><path style="stroke: red" d="M0 0h1"/></svg>',
            "paints stroke='red'",
        ),
        (
            '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><style>.a{fill:blue}</style></svg>',
            "paints fill='blue'",
        ),
        (
            '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><path d="M0 0h1"/></svg>',
            "never paints in currentColor",
        ),
        (
            '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><!-- x --><path fill="currentColor"/></svg>',
            "has a comment",
        ),
        ('<svg xmlns="http://www.w3.org/2000/svg"><path fill="currentColor"/></svg>', "neither width and height"),
        ("<png/>", "not <svg>"),
        ("<svg", "not well-formed XML"),
    ],
)
def test_an_icon_the_registry_would_refuse_is_named(tmp_path: Path, svg: str, problem: str) -> None:
    icon = tmp_path / "icon.svg"
    icon.write_text(svg)
    assert any(problem in found for found in icon_problems(icon)), icon_problems(icon)


def test_the_icon_is_16_by_16_in_current_color_only() -> None:
    assert icon_problems(ROOT / "registry" / "icon.svg") == []
