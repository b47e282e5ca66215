"""Count the tests that reach past a production module's public surface: what issue 29 asks to be zero.

    python -m probes.private_patches [--root DIR] [--all]

reads every ``tests/**/*.py`` under ``DIR`` (default: this checkout) with ``ast``, and lists each site, one a line
(``path:line: kind: what``), then the count. Exit status 1 when a site is neither fixed nor on ``ALLOWED``. A site is:

- **private-patch**: ``monkeypatch.setattr`` / ``delattr`` / ``setitem``, ``unittest.mock.patch`` / ``patch.object``
  of a ``_private`` name (of a hermes_acp module, or of an object the file does not import from elsewhere);
- **constant-patch**: the same of an ``UPPER_CASE`` name of a hermes_acp module (a limit or timeout that should be
  passed in as a value);
- **private-read**: ``obj._name`` where ``obj`` is not ``self`` / ``cls`` and not a module imported from outside
  hermes_acp (``os._exit`` is fine); a method's own ``self._name`` is the test double's business;
- **private-import**: ``from hermes_acp.x import _name``.

A string that is Python source naming hermes_acp (a script a test runs with ``python -c``) is read the same way.
``--all`` also lists, without counting them, the patches of a public name of a hermes_acp module or object
(a function swapped for a spy): each is a seam test doubles could take instead. Importing a public name from a
``_private`` module is not a site: the module is private to its package, the name is what the package tests.

It knows nothing of the production code beyond the name ``hermes_acp``.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ALLOWED", "NOT_OURS", "Site", "counted", "find_sites", "main"]

PACKAGE = "hermes_acp"
ALLOWED: dict[tuple[str, str], str] = {
    ("tests/sessions/test_review.py", "MAX_DIFF_BYTES"): "sessions/review.py moves to commands/ (issue 29, helper S)",
    ("tests/sessions/test_review.py", "MAX_UNTRACKED"): "sessions/review.py moves to commands/ (issue 29, helper S)",
}
"""(file, name) → why it is left for now. Only sites in folders another change of issue 29 is moving."""
NOT_OURS: dict[tuple[str, str], str] = {
    ("tests/fakes/server.py", "_conn"): "the acp SDK's client connection (any request: the SDK has no public way)",
    ("tests/test_process_lifecycle.py", "_transport"): "asyncio's subprocess (its stdout pipe, closed on purpose)",
    ("tests/test_stdio_threaded.py", "_transport"): "asyncio's subprocess (its stdout pipe, closed on purpose)",
}
"""(file, name) → whose object it is: a private attribute of a third-party object the file cannot name by import.
Not a production object, so not counted; listed so that every exception is read here."""
COUNTED = ("private-patch", "constant-patch", "private-read", "private-import")
_PATCHERS = {"setattr", "delattr", "setitem", "delitem"}


@dataclass(frozen=True, slots=True)
class Site:
    path: str
    line: int
    kind: str
    """One of ``COUNTED``, or ``public-patch`` (listed with ``--all`` only)."""
    name: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}: {self.name}"


def find_sites(root: Path) -> list[Site]:
    """Every site in ``root/tests`` (see the module docstring), public patches included, in file and line order."""
    sites: list[Site] = []
    for path in sorted((root / "tests").rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=relative)
        sites.extend(sorted(_Reader(relative).read(tree), key=lambda site: site.line))
    return sites


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _constant(name: str) -> bool:
    return name.isupper() and not name.startswith("_")


class _Reader:
    def __init__(self, path: str, line_offset: int = 0):
        self.path = path
        self.offset = line_offset
        self.origins: dict[str, str] = {}
        """A name the file binds by an import → the dotted path it came from."""

    def read(self, tree: ast.AST) -> Iterator[Site]:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    self.origins[bound] = alias.name if alias.asname else bound
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    self.origins[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for node in ast.walk(tree):
            yield from self._visit(node)

    def _site(self, node: ast.AST, kind: str, name: str) -> Site:
        return Site(self.path, self.offset + getattr(node, "lineno", 0), kind, name)

    def _origin(self, node: ast.expr) -> str | None:
        """The dotted path an expression names when it is built on an imported name (None: a local object)."""
        if isinstance(node, ast.Name):
            return self.origins.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self._origin(node.value)
            return f"{base}.{node.attr}" if base is not None else None
        return None

    def _outside(self, node: ast.expr) -> bool:
        """Built on a name imported from outside hermes_acp (``os``, ``sys``, ``shutil``...)."""
        origin = self._origin(node)
        return origin is not None and origin.split(".")[0] != PACKAGE

    def _visit(self, node: ast.AST) -> Iterator[Site]:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == PACKAGE:
            for alias in node.names:
                if _private(alias.name):
                    yield self._site(node, "private-import", f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and _private(node.attr):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")) and not self._outside(owner):
                yield self._site(node, "private-read", f"{ast.unparse(owner)}.{node.attr}")
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and self._patched(target):
                    yield self._patch(node, self._origin(target.value), target.attr, ast.unparse(target))
        elif isinstance(node, ast.Call):
            yield from self._call(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield from self._script(node, node.value)

    def _patched(self, target: ast.Attribute) -> bool:
        """An assignment that patches: a ``_private`` attribute of anything but ``self`` / ``cls`` and outside
        modules, or any attribute of a hermes_acp module or class (an object the test holds, ``record.x = ...``,
        is its own)."""
        owner = target.value
        if (isinstance(owner, ast.Name) and owner.id in ("self", "cls")) or self._outside(owner):
            return False
        return _private(target.attr) or self._origin(owner) is not None

    def _call(self, node: ast.Call) -> Iterator[Site]:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _PATCHERS and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):  # setattr("pkg.mod.NAME", value)
                if func.attr in ("setattr", "delattr"):
                    module, _, name = first.value.rpartition(".")
                    yield self._patch(node, module, name, first.value)
                return
            if self._outside(first) or len(node.args) < 2 or not isinstance(node.args[1], ast.Constant):
                return
            name = str(node.args[1].value)
            yield self._patch(node, self._origin(first), name, f"{ast.unparse(first)}.{name}")
            return
        patcher = self._origin(func) or ""
        if patcher in ("unittest.mock.patch", "mock.patch") and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                module, _, name = first.value.rpartition(".")
                yield self._patch(node, module, name, first.value)
        elif patcher in ("unittest.mock.patch.object", "mock.patch.object") and len(node.args) >= 2:
            first, second = node.args[0], node.args[1]
            if isinstance(second, ast.Constant) and not self._outside(first):
                name = str(second.value)
                yield self._patch(node, self._origin(first), name, f"{ast.unparse(first)}.{name}")

    def _patch(self, node: ast.AST, owner: str | None, name: str, shown: str) -> Site:
        """A patch of ``name`` on ``owner`` (a dotted path, or None for a local object)."""
        ours = owner is None or owner.split(".")[0] == PACKAGE
        if _private(name):
            return self._site(node, "private-patch", shown)
        if ours and owner is not None and _constant(name):
            return self._site(node, "constant-patch", shown)
        return self._site(node, "public-patch" if ours else "outside-patch", shown)

    def _script(self, node: ast.Constant, text: str) -> Iterator[Site]:
        if PACKAGE not in text or ("\n" not in text and not text.startswith(("import ", "from "))):
            return
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return
        yield from _Reader(self.path, self.offset + node.lineno - 1).read(tree)


def _key(site: Site) -> tuple[str, str]:
    return site.path, site.name.rsplit(".", 1)[-1]


def counted(sites: list[Site]) -> list[Site]:
    """The sites issue 29 wants gone that are on neither ``ALLOWED`` nor ``NOT_OURS``."""
    return [s for s in sites if s.kind in COUNTED and _key(s) not in ALLOWED and _key(s) not in NOT_OURS]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="probes.private_patches", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent, help="a checkout")
    parser.add_argument("--all", action="store_true", help="also list patches of public names (not counted)")
    args = parser.parse_args(argv)
    sites = find_sites(args.root)
    bad = counted(sites)
    allowed = [s for s in sites if s.kind in COUNTED and _key(s) in ALLOWED]
    not_ours = [s for s in sites if s.kind in COUNTED and _key(s) in NOT_OURS]
    for site in bad:
        print(site)
    for site in allowed:
        print(f"{site}  [allowed: {ALLOWED[_key(site)]}]")
    for site in not_ours:
        print(f"{site}  [not ours: {NOT_OURS[_key(site)]}]")
    public = [s for s in sites if s.kind == "public-patch"]
    if args.all:
        for site in public:
            print(site)
    print(
        f"{len(bad)} sites ({len(allowed)} allowed in moving folders, {len(not_ours)} on third-party objects;"
        f" {len(public)} patches of public names, not counted)"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
