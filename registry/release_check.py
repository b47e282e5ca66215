"""The release check: the version and names the ACP Registry entry pins agree with the package, and the entry and
its icon are what the registry accepts.

``python -m registry.release_check`` (``make release-check``) fails, naming each problem, when

- the version of ``pyproject.toml``, ``hermes_acp/version.py`` and ``registry/agent.json`` differ, the
  distribution's name in ``pyproject.toml`` and ``version.py`` differ, the entry's ``distribution.uvx.package`` is
  not ``<distribution>==<version>``, or no console script is named like the distribution;
- ``registry/agent.json`` does not validate against the registry's schema (``registry/agent.schema.json``), or its
  repository and license are not the package's;
- ``registry/icon.svg`` is not a 16×16 SVG drawn in ``currentColor`` only (no other colour, no comments).

``--bump X.Y.Z`` writes the new version into all three files first (``pyproject.toml`` through tomlkit, so its
comments stay), then checks. It reads files only: nothing is imported from the package, nothing is fetched.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema
import tomlkit

__all__ = ["ROOT", "bump", "icon_problems", "problems"]

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = Path("pyproject.toml")
VERSION_MODULE = Path("hermes_acp", "version.py")
ENTRY = Path("registry", "agent.json")
SCHEMA = Path("registry", "agent.schema.json")
"""Paths inside the repository (each function takes the repository's root)."""
ICON_SIZE = 16.0
_COLOURLESS = frozenset({"currentcolor", "none", "inherit"})
_SEMVER = re.compile(r"\d+\.\d+\.\d+")
_CSS_PAINT = re.compile(r"\b(fill|stroke|color|stop-color)\s*:\s*([^;}\s]+)", re.IGNORECASE)


def _project(root: Path) -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((root / PYPROJECT).read_text(encoding="utf-8"))["project"]
    return project


def _module_constant(path: Path, name: str) -> str | None:
    """A string constant of a module, read from its source (the package is not imported)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        named = isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        if named and isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            value = node.value.value
            if isinstance(value, str):
                return value
    return None


def problems(root: Path = ROOT) -> list[str]:
    """Every reason the tree at ``root`` cannot be released as it is (empty: it can)."""
    found: list[str] = []
    project = _project(root)
    name, version = project["name"], project["version"]
    entry: dict[str, Any] = json.loads((root / ENTRY).read_text(encoding="utf-8"))
    module_version = _module_constant(root / VERSION_MODULE, "__version__")
    if module_version != version:
        found.append(f"hermes_acp/version.py has __version__ {module_version!r}, pyproject.toml {version!r}")
    distribution = _module_constant(root / VERSION_MODULE, "DISTRIBUTION")
    if distribution != name:
        found.append(f"hermes_acp/version.py has DISTRIBUTION {distribution!r}, pyproject.toml name {name!r}")
    if entry.get("version") != version:
        found.append(f"registry/agent.json has version {entry.get('version')!r}, pyproject.toml {version!r}")
    package = entry.get("distribution", {}).get("uvx", {}).get("package")
    if package != f"{name}=={version}":
        found.append(f"registry/agent.json: distribution.uvx.package is {package!r}, not {name}=={version!r}")
    if not _SEMVER.fullmatch(version):
        found.append(f"pyproject.toml: version {version!r} is not MAJOR.MINOR.PATCH")
    if project.get("scripts", {}).get(name) is None:
        found.append(f"pyproject.toml: no console script named {name!r} (what `uvx {name}` runs)")
    schema = json.loads((root / SCHEMA).read_text(encoding="utf-8"))
    for error in sorted(jsonschema.Draft7Validator(schema).iter_errors(entry), key=str):
        where = "/".join(str(part) for part in error.absolute_path) or "(top)"
        found.append(f"registry/agent.json at {where}: {error.message}")
    repository = project.get("urls", {}).get("Repository")
    if entry.get("repository") != repository:
        found.append(f"registry/agent.json: repository {entry.get('repository')!r} is not pyproject's {repository!r}")
    if entry.get("license") != project.get("license"):
        found.append(
            f"registry/agent.json: license {entry.get('license')!r} is not pyproject's {project.get('license')!r}"
        )
    icon = entry.get("icon")
    if icon is not None:
        icon_path = (root / ENTRY).parent / icon
        found.extend(f"registry/{icon}: {problem}" for problem in icon_problems(icon_path))
    return found


def icon_problems(path: Path) -> list[str]:
    """What keeps ``path`` from being a registry icon: a square 16×16 SVG that paints in ``currentColor`` only."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return [f"cannot be read: {exc.strerror or exc}"]
    found: list[str] = []
    if "<!--" in text:
        found.append("has a comment (the registry embeds icons in MDX, where comments break)")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        return [*found, f"is not well-formed XML: {exc}"]
    if root.tag.rpartition("}")[2] != "svg":
        return [*found, f"the root element is <{root.tag.rpartition('}')[2]}>, not <svg>"]
    size = _size(root)
    if size is None:
        found.append("has neither width and height nor a viewBox")
    elif size != (ICON_SIZE, ICON_SIZE):
        found.append(f"is {size[0]:g}×{size[1]:g}, not 16×16")
    painted = False
    for element in root.iter():
        paints = [(name, element.get(name)) for name in ("fill", "stroke", "color", "stop-color")]
        style = element.get("style") or ""
        if element.tag.rpartition("}")[2] == "style":
            style += ";" + (element.text or "")
        paints.extend((name.lower(), value) for name, value in _CSS_PAINT.findall(style))
        for name, value in paints:
            if value is None:
                continue
            normalised = value.strip().lower()
            if normalised == "currentcolor":
                painted = True
            elif normalised not in _COLOURLESS:
                found.append(f"paints {name}={value.strip()!r}: only currentColor (or none) themes with the editor")
    if not painted:
        found.append("never paints in currentColor")
    return found


def _size(root: ET.Element) -> tuple[float, float] | None:
    width, height = root.get("width"), root.get("height")
    if width and height:
        try:
            return float(re.sub(r"(px)?$", "", width.strip())), float(re.sub(r"(px)?$", "", height.strip()))
        except ValueError:
            pass
    box = (root.get("viewBox") or "").replace(",", " ").split()
    if len(box) == 4:
        try:
            return float(box[2]), float(box[3])
        except ValueError:
            return None
    return None


def bump(version: str, root: Path = ROOT) -> None:
    """Write ``version`` into pyproject.toml, hermes_acp/version.py and registry/agent.json."""
    if not _SEMVER.fullmatch(version):
        raise ValueError(f"{version!r} is not MAJOR.MINOR.PATCH")
    pyproject = root / PYPROJECT
    document = tomlkit.parse(pyproject.read_text(encoding="utf-8"))
    project = document["project"]
    assert isinstance(project, tomlkit.items.Table)
    project["version"] = version
    name = str(project["name"])
    pyproject.write_text(tomlkit.dumps(document), encoding="utf-8")
    module = root / VERSION_MODULE
    text = module.read_text(encoding="utf-8")
    module.write_text(re.sub(r'(?m)^__version__ = "[^"]*"$', f'__version__ = "{version}"', text), encoding="utf-8")
    entry_path = root / ENTRY
    entry = json.loads(entry_path.read_text(encoding="utf-8"))
    entry["version"] = version
    entry.setdefault("distribution", {}).setdefault("uvx", {})["package"] = f"{name}=={version}"
    entry_path.write_text(json.dumps(entry, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m registry.release_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--bump", metavar="X.Y.Z", help="write this version into the three files, then check")
    args = parser.parse_args(argv)
    if args.bump:
        bump(args.bump)
    found = problems()
    for problem in found:
        print(f"release-check: {problem}", file=sys.stderr)
    if not found:
        project = _project(ROOT)
        print(f"release-check: {project['name']} {project['version']}: versions, entry and icon agree")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
