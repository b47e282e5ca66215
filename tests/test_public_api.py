"""The package's public surface, pinned: every module says what it exports (``__all__``, a literal list), each name
it lists exists, and the whole list, module by module, equals ``tests/golden/public_api.txt``.

A change to what a module exports is then a change to that file too, seen in review beside the code: a name that
went away breaks whoever imported it, and a new one is a promise. To accept a change on purpose, write the file
again and read its diff::

    .venv/bin/python -m tests.test_public_api --write

The list is read from the source (``ast``), so modules of another platform count as much as this one's; the names
are then looked up in the imported modules, except a name a module binds only for the type checker (under
``if TYPE_CHECKING:``), which exists for mypy alone.
"""

from __future__ import annotations

import ast
import difflib
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path

import hermes_acp

PACKAGE = Path(hermes_acp.__file__).parent
GOLDEN = Path(__file__).parent / "golden" / "public_api.txt"
SCRIPTS = {"hermes_acp.__main__"}
"""Modules run, never imported: they export nothing."""


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    exports: list[str] | None
    """The literal ``__all__`` (None: the module has none, or not as a literal list of strings)."""
    typing_only: frozenset[str]
    """Names bound only under ``if TYPE_CHECKING:``."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _exports(tree: ast.Module) -> list[str] | None:
    found: list[str] | None = None
    targets: list[ast.expr]
    value: ast.expr | None
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets):
            try:
                literal = ast.literal_eval(value) if value is not None else None
            except ValueError:
                return None
            if not isinstance(literal, list | tuple) or not all(isinstance(name, str) for name in literal):
                return None
            found = list(literal)
    return found


def _typing_only(tree: ast.Module) -> frozenset[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for inner in node.body:
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    names.update((alias.asname or alias.name).split(".")[0] for alias in inner.names)
    return frozenset(names)


def modules() -> list[Module]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module_name(path)
        if name in SCRIPTS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found.append(Module(name, path, _exports(tree), _typing_only(tree)))
    return found


def surface(found: list[Module]) -> str:
    """One line per module: its name, then what it exports in ``__all__``'s order."""
    return "".join(f"{module.name}: {', '.join(module.exports or [])}\n" for module in found)


def test_every_module_says_what_it_exports() -> None:
    missing = [module.name for module in modules() if module.exports is None]
    assert not missing, f"no literal __all__ (a list of names) in: {', '.join(missing)}"


def test_every_exported_name_exists() -> None:
    absent, broken = [], []
    for module in modules():
        try:
            loaded = importlib.import_module(module.name)
        except ImportError as error:  # another platform's module (its OS-only imports): its names stay unchecked here
            if error.name is None or error.name.split(".")[0] == "hermes_acp":
                broken.append(f"{module.name}: {error}")
            continue
        for name in module.exports or []:
            if not hasattr(loaded, name) and name not in module.typing_only:
                absent.append(f"{module.name}.{name}")
    assert not broken, f"modules that do not import: {'; '.join(broken)}"
    assert not absent, f"listed in __all__ but not defined: {', '.join(absent)}"


def test_no_private_name_is_exported() -> None:
    private = [
        f"{module.name}.{name}"
        for module in modules()
        for name in module.exports or []
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__"))  # __version__ is public
    ]
    assert not private, f"private names in __all__: {', '.join(private)}"


def test_the_public_surface_is_the_pinned_one() -> None:
    now = surface(modules())
    pinned = GOLDEN.read_text(encoding="utf-8")
    if now != pinned:
        diff = "".join(difflib.unified_diff(pinned.splitlines(True), now.splitlines(True), "pinned", "now", n=0))
        raise AssertionError(
            "the package's public surface changed; if on purpose, run "
            f"`.venv/bin/python -m tests.test_public_api --write` and commit tests/golden/public_api.txt:\n{diff}"
        )


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.test_public_api --write")
    GOLDEN.write_text(surface(modules()), encoding="utf-8")
    sys.stdout.write(f"wrote {GOLDEN.name}: {len(modules())} modules\n")
