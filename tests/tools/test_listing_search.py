"""list_files and search_files: .gitignore semantics, globs, bounds, sensitive files, and ripgrep and the Python
walker giving the same answers on the same tree."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from hermes_acp.errors import ToolInputError
from hermes_acp.tools._finder import Finder
from hermes_acp.tools._ignore import IgnoreRules, compile_pattern
from hermes_acp.tools.base import AnyTool
from hermes_acp.tools.listing import ListFilesTool
from hermes_acp.tools.search import SearchFilesTool

from .helpers import call, context, request_of

pytestmark = pytest.mark.anyio

RG = shutil.which("rg")
needs_rg = pytest.mark.skipif(RG is None, reason="ripgrep is not installed (CI installs it)")
ENGINES = [pytest.param(None, id="python"), pytest.param(RG, id="ripgrep", marks=needs_rg)]


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A workspace with most of what .gitignore semantics and the engines' rules have to handle."""
    (tmp_path / ".gitignore").write_text("parent-ignored.txt\n")  # above the repository: does not apply
    root = tmp_path / "ws"
    write(
        root,
        {
            ".gitignore": "build/\n*.log\n!keep.log\n/top.txt\nsub/x.py\ndocs/**/*.tmp\n\\#literal\n",
            "src/app.py": "import os\ndef main():\n    return TODO_fix\n",
            "src/util.py": "# TODO: tidy\nvalue = 'todo'\n",
            "src/sub/x.py": "TODO in src/sub/x.py is kept (the pattern is anchored)\n",
            "sub/x.py": "TODO ignored\n",
            "src/top.txt": "TODO nested top is kept\n",
            "top.txt": "TODO root top is ignored\n",
            "src/deep/.gitignore": "*.gen\n",
            "src/deep/a.gen": "TODO ignored by the nested file\n",
            "src/deep/b.py": "TODO kept\n",
            "build/out.py": "TODO ignored folder\n",
            "debug.log": "TODO ignored\n",
            "keep.log": "TODO re-included\n",
            "docs/a/b/c.tmp": "TODO ignored\n",
            "docs/a/b/c.md": "TODO kept\n",
            "#literal": "TODO ignored by an escaped hash\n",
            "parent-ignored.txt": "TODO kept: the parent's .gitignore stops at the repository root\n",
            ".hidden/h.txt": "TODO hidden files are searched\n",
            ".github/workflows/ci.yml": "run: echo TODO\n",
            ".env": "TOKEN=TODO-secret\n",
            "certs/server.pem": "TODO key material\n",
            "vendor/nested/.git/HEAD": "ref: refs/heads/main\n",
            "vendor/nested/lib.log": "TODO outer *.log does not reach into a nested repository\n",
            "crlf.txt": b"TODO windows\r\nsecond\r\n",
            "latin.txt": "caf\xe9 TODO\n".encode("latin-1"),
            "blob.bin": b"TODO\0binary\n",
            "late-nul.bin": b"TODO early line\n" + b"x" * 200_000 + b"\n\0\n",
            "unicode/é.txt": "TODO accents\n",
            "Upper.md": "todo lower and TODO upper\n",
        },
    )
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("TODO in .git is never searched\n")
    (root / "link.py").symlink_to(root / "src" / "app.py")
    (root / "linkdir").symlink_to(root / "src", target_is_directory=True)
    (root / "big.txt").write_bytes(b"TODO\n" + b"y" * (10 * 1024 * 1024 + 10))
    return root


def test_gitignore_patterns_follow_git_semantics() -> None:
    rules = IgnoreRules.parse("*.log\n!keep.log\n/top\nbuild/\na/**/b\n**/c.txt\nd/**\n[!x]y.md\n\\!bang\nsp\\ \n")
    ignored = {
        "x.log": True,
        "deep/x.log": True,
        "keep.log": False,
        "top": True,
        "sub/top": None,
        "build": True,
        "a/b": True,
        "a/1/2/b": True,
        "z/c.txt": True,
        "c.txt": True,
        "d/e/f": True,
        "d": None,
        "ay.md": True,
        "xy.md": None,
        "!bang": True,
        "sp ": True,
        "sp": None,
    }
    for path, verdict in ignored.items():
        assert rules.verdict(path, is_dir=path in ("build", "a/b", "d")) is verdict, path
    assert rules.verdict("build", is_dir=False) is None, "build/ matches folders only"
    assert compile_pattern("# comment") is None
    assert compile_pattern("   ") is None


@pytest.mark.parametrize("engine", ENGINES)
async def test_listing_honours_gitignore_and_a_glob_selects_files(tree: Path, engine: str | None) -> None:
    everything, _, _ = await Finder(engine).files(tree, None, cap=100)
    names = {str(p.relative_to(tree)) for p in everything}
    assert {"src/sub/x.py", "src/top.txt", "keep.log", ".hidden/h.txt", "vendor/nested/lib.log"} <= names
    assert not names & {"sub/x.py", "top.txt", "build/out.py", "debug.log", "docs/a/b/c.tmp", "#literal"}
    assert not names & {"src/deep/a.gen", ".git/config", "link.py", "linkdir/app.py"}
    found, more, _ = await Finder(engine).files(tree, "*.py", cap=100)
    # As in ripgrep, a glob picks files even where .gitignore names them; ignored folders stay skipped.
    assert sorted(str(p.relative_to(tree)) for p in found) == [
        "src/app.py",
        "src/deep/b.py",
        "src/sub/x.py",
        "src/util.py",
        "sub/x.py",
    ]
    assert not more


@pytest.mark.parametrize("engine", ENGINES)
async def test_parent_gitignore_applies_up_to_the_repository_root(tmp_path: Path, engine: str | None) -> None:
    write(
        tmp_path, {".gitignore": "*.skip\n", "repo/.gitignore": "*.tmp\n", "repo/a/b/x.tmp": "", "repo/a/b/y.skip": ""}
    )
    write(tmp_path, {"repo/a/b/z.txt": "", "plain/.gitignore": "*.tmp\n", "plain/a/x.tmp": "", "plain/a/y.skip": ""})
    write(tmp_path, {"plain/a/z.txt": ""})
    (tmp_path / "repo" / ".git").mkdir()
    in_repo, _, _ = await Finder(engine).files(tmp_path / "repo" / "a", None, cap=100)
    assert sorted(p.name for p in in_repo) == ["y.skip", "z.txt"]
    no_repo, _, _ = await Finder(engine).files(tmp_path / "plain" / "a", None, cap=100)
    assert sorted(p.name for p in no_repo) == ["z.txt"]


@needs_rg
@pytest.mark.parametrize(
    ("start", "glob"),
    [
        (".", None),
        (".", "*.py"),
        (".", "src/**"),
        (".", "*.log"),
        (".", "!*.txt"),
        (".", "**/*.md"),
        ("src", None),
        ("src/deep", None),
        ("build", None),
        ("vendor", None),
    ],
)
async def test_ripgrep_and_python_list_the_same_files(tree: Path, start: str, glob: str | None) -> None:
    root = tree / start
    ripgrep, python = Finder(RG), Finder(None)
    with_rg = await ripgrep.files(root, glob, cap=1000)
    with_python = await python.files(root, glob, cap=1000)
    assert (ripgrep.last_engine, python.last_engine) == ("ripgrep", "python")
    assert with_rg == with_python
    assert with_rg[0], "the case lists something"


@pytest.fixture
def folders(tmp_path: Path) -> Path:
    """Patterns about folders, where "the folder" and "what it holds" differ (and pathspec's answers count both)."""
    root = tmp_path / "ws"
    write(
        root,
        {
            ".gitignore": "d/**\n!d/keep\nout/**/\n*/tmp/\nx[\nsp\\ \n**/cache/**\n!**/cache/keep.txt\n",
            "d/a.py": "", "d/keep": "", "d/sub/b.py": "",
            "out/top.txt": "", "out/gen/c.py": "",
            "src/tmp/t.py": "", "src/app.py": "", "src/src/inner.py": "",
            "x[": "", "sp ": "", "sp": "",
            "lib/cache/k.bin": "", "lib/cache/keep.txt": "",
            "sub/x.py": "", "a/b/c/b/deep.py": "", "a/b/f.py": "",
        },
    )  # fmt: skip
    (root / ".git").mkdir()
    return root


@needs_rg
@pytest.mark.parametrize(
    "glob",
    [None, "src", "sub/", "d/**", "**/*", "*/", "a/**/b", "!src/**", "*.py", "src/*", "**/b/*", "**"],
)
async def test_ripgrep_and_python_agree_on_folder_patterns(folders: Path, glob: str | None) -> None:
    ripgrep, python = Finder(RG), Finder(None)
    with_rg = await ripgrep.files(folders, glob, cap=1000)
    with_python = await python.files(folders, glob, cap=1000)
    assert (ripgrep.last_engine, python.last_engine) == ("ripgrep", "python")
    assert with_rg == with_python
    if glob is None:
        names = {str(p.relative_to(folders)) for p in with_rg[0]}
        assert {"d/keep", "out/top.txt", "src/app.py", "x[", "sp", "lib/cache/keep.txt"} <= names
        assert not names & {"d/a.py", "d/sub/b.py", "out/gen/c.py", "src/tmp/t.py", "sp ", "lib/cache/k.bin"}


@needs_rg
@pytest.mark.parametrize(
    ("pattern", "glob", "literal", "ignore_case"),
    [
        ("TODO", None, False, False),
        ("todo", None, False, True),
        (r"TODO\b", "*.py", False, False),
        ("TODO_fix|tidy", None, False, False),
        ("^run:", "*.yml", False, False),
        ("x.py", None, True, False),
        ("caf", None, True, False),
        (r"windows\r?$", None, False, False),
        (r"\w+\(\)", None, False, False),
        ("TODO", "!src/**", False, False),
    ],
)
async def test_ripgrep_and_python_find_the_same_matches(
    tree: Path, pattern: str, glob: str | None, literal: bool, ignore_case: bool
) -> None:
    regex = re.compile(re.escape(pattern) if literal else pattern, re.IGNORECASE if ignore_case else 0)
    kwargs = {"literal": literal, "ignore_case": ignore_case, "glob": glob, "cap": 1000}
    ripgrep, python = Finder(RG), Finder(None)
    with_rg, rg_more, _ = await ripgrep.search(tree, pattern, regex, **kwargs)  # type: ignore[arg-type]
    with_python, py_more, _ = await python.search(tree, pattern, regex, **kwargs)  # type: ignore[arg-type]
    assert (ripgrep.last_engine, python.last_engine) == ("ripgrep", "python")
    assert with_rg, "the case finds something"
    assert sorted(with_rg, key=lambda m: (str(m.path), m.line)) == sorted(
        with_python, key=lambda m: (str(m.path), m.line)
    )
    assert rg_more == py_more


@pytest.mark.parametrize("engine", ENGINES)
async def test_search_output_is_sorted_relative_and_skips_what_it_must(tree: Path, engine: str | None) -> None:
    called = await call(SearchFilesTool(ripgrep=engine), context(tree), pattern="TODO")
    lines = called.text.split("\n")
    hits = [line for line in lines[1:] if not line.startswith("[")]
    assert hits == sorted(hits, key=lambda h: (h.split(":")[0], int(h.split(":")[1])))
    files = {h.split(":")[0] for h in hits}
    assert files == {
        ".github/workflows/ci.yml",
        ".hidden/h.txt",
        "Upper.md",
        "crlf.txt",
        "docs/a/b/c.md",
        "keep.log",
        "latin.txt",
        "parent-ignored.txt",
        "src/app.py",
        "src/deep/b.py",
        "src/sub/x.py",
        "src/top.txt",
        "src/util.py",
        "unicode/é.txt",
        "vendor/nested/lib.log",
    }
    assert "crlf.txt:1: TODO windows" in hits
    assert "latin.txt:1: caf\ufffd TODO" in hits
    assert lines[0] == "15 matches in 15 files:"
    assert "2 matches in sensitive files (.env, keys, credentials) not shown." in called.text


async def test_search_is_bounded_and_says_so(tmp_path: Path) -> None:
    write(tmp_path, {f"f{i:02}.txt": "hit\n" * 30 for i in range(10)})
    called = await call(SearchFilesTool(), context(tmp_path), pattern="hit", limit=25)
    hits = [line for line in called.text.split("\n") if line.startswith("f")]
    assert len(hits) == 25
    assert hits[0] == "f00.txt:1: hit" and hits[-1] == "f00.txt:25: hit"
    assert called.text.startswith("300 matches in 10 files:")
    assert "Showing the first 25; narrow the search" in called.text


async def test_long_lines_are_cut_in_results(tmp_path: Path) -> None:
    write(tmp_path, {"wide.txt": "needle " + "x" * 1000 + "\n"})
    called = await call(SearchFilesTool(ripgrep=None), context(tmp_path), pattern="needle")
    line = called.text.split("\n")[1]
    assert line.startswith("wide.txt:1: needle xxx") and line.endswith(" …") and len(line) < 330


async def test_search_of_one_file_and_no_matches(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "alpha\nbeta\n", "b.txt": "alpha\n"})
    called = await call(SearchFilesTool(), context(tmp_path), pattern="alpha", path="a.txt")
    assert called.text == "1 match in 1 file:\na.txt:1: alpha"
    none = await call(SearchFilesTool(), context(tmp_path), pattern="gamma")
    assert none.text == "No matches for 'gamma' in .."


async def test_bad_regex_and_missing_path_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(ToolInputError, match=r"not a valid regular expression.*literal=true"):
        await call(SearchFilesTool(), context(tmp_path), pattern="foo(")
    literal = await call(SearchFilesTool(), context(tmp_path), pattern="foo(", literal=True)
    assert literal.text.startswith("No matches")
    with pytest.raises(ToolInputError, match="does not exist"):
        await call(SearchFilesTool(), context(tmp_path), pattern="x", path="missing")


@needs_rg
async def test_a_python_only_regex_falls_back_to_the_walker(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "foobar\nfoobaz\n"})
    called = await call(SearchFilesTool(ripgrep=RG), context(tmp_path), pattern="foo(?=baz)")
    assert called.text == "1 match in 1 file:\na.txt:2: foobaz"


async def test_list_folder_one_level_with_ignored_count(tree: Path) -> None:
    called = await call(ListFilesTool(), context(tree), path=".")
    lines = called.text.split("\n")
    assert lines[0].startswith("./ (")
    assert ".hidden/" in lines and "src/" in lines and "vendor/" in lines
    assert "build/" not in lines and ".git/" not in lines
    assert "keep.log  (17 B)" in lines
    assert any(line.startswith("link.py -> ") for line in lines)
    assert "[4 entries ignored by .gitignore not shown.]" in lines
    dirs = [line for line in lines[1:] if line.endswith("/")]
    assert lines[1 : 1 + len(dirs)] == dirs, "folders come first"


async def test_list_glob_is_sorted_bounded_and_relative_to_the_cwd(tree: Path) -> None:
    ctx = context(tree)
    called = await call(ListFilesTool(), ctx, path="src", glob="*.py", limit=2)
    assert called.text.split("\n") == [
        "Files matching '*.py' under src: 4",
        "src/app.py",
        "src/deep/b.py",
        "[Showing 2 of 4 files; narrow the glob or the path.]",
    ]
    tool = ListFilesTool()
    presentation = tool.present(tool.validate({"path": "src", "glob": "*.py"}), ctx)
    assert (presentation.title, presentation.kind) == ("Find *.py in src", "search")
    assert tool.present(tool.validate({}), ctx).title == "List ."


async def test_list_errors(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "x"})
    with pytest.raises(ToolInputError, match="is a file, not a folder"):
        await call(ListFilesTool(), context(tmp_path), path="a.txt")
    with pytest.raises(ToolInputError, match="does not exist"):
        await call(ListFilesTool(), context(tmp_path), path="nope")
    empty = tmp_path / "empty"
    empty.mkdir()
    called = await call(ListFilesTool(), context(tmp_path), path="empty")
    assert called.text == "empty is empty."


async def test_listing_and_search_ask_outside_the_workspace(tmp_path: Path) -> None:
    from hermes_acp.tools.policy import decide

    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = context(ws)
    tools: list[tuple[AnyTool, dict[str, str]]] = [
        (ListFilesTool(), {"path": ".."}),
        (SearchFilesTool(), {"pattern": "x", "path": "/"}),
    ]
    for tool, arguments in tools:
        request = await request_of(tool, ctx, **arguments)
        assert request is not None and not request.mutating
        assert decide("dont_ask", request, ctx.env.workspace, {}).decision == "ask"
        assert decide("read_only", request, ctx.env.workspace, {}).decision == "deny"
        inside = await request_of(tool, ctx, **{**arguments, "path": "."})
        assert inside is not None
        assert decide("read_only", inside, ctx.env.workspace, {}).decision == "allow"
