"""The repository stands alone: its references point into docs/, and every one of them resolves.

Code, tests and fixtures explain themselves by naming sections of docs/*.md. These tests fail when a file of the
repository points at a document that is not in it (the design document, reference notes, seed notes), when a docs/
reference names a file or a section that does not exist, when a section number is used twice, and when docs/ names a
test that is gone. The patterns are spelled so that this file does not match them itself (the section sign is
written as an escape).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SECTION_SIGN = "\u00a7"
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "out", "build", "dist"})
_KEPT_DOT_DIRS = frozenset({".ci"})

OUTSIDE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"DESIGN\s*\u00a7"), "the design document"),
    (re.compile(r"\.\./shared"), "a folder beside the repository"),
    (re.compile(r"\breference[/][\w.-]+\.md"), "a reference note"),
    (re.compile(r"seeds[/]"), "the seed notes"),
)
_NUMBER = r"\u00a7\d+(?:\.\d+)*"
REFERENCE = re.compile(
    rf"(?<![\w./-])(?P<doc>[\w./-]*[\w-]\.md)`?(?P<sections>\s+{_NUMBER}(?:(?:\s*,\s*|\s+and\s+|\s+or\s+){_NUMBER})*)"
)
"""A document followed by one or more section numbers (comma-separated, or joined by "and" / "or")."""
BARE_DOC = re.compile(r"(?<![\w./-])docs/[\w-]+\.md")
LINK = re.compile(r"\]\((?P<target>[\w./-]+\.md)(?:#[\w-]*)?\)")
HEADING = re.compile(r"^#{1,6}\s+(?P<number>\d+(?:\.\d+)*)\.?\s", re.MULTILINE)
TEST_NAME = re.compile(r"(?P<path>(?<![\w/.])tests/[\w/]+\.py)(?:::(?P<name>\w+))?|(?<![\w/.:])::(?P<short>test_\w+)")
"""``tests/a/test_b.py``, ``tests/a/test_b.py::test_c``, or ``::test_c`` after a path named earlier."""


def repository_texts() -> Iterator[tuple[Path, str]]:
    """Every text file of the working tree and its text, without virtual environments, caches, build output and
    git's own files."""
    stack = [ROOT]
    while stack:
        folder = stack.pop()
        for entry in sorted(folder.iterdir()):
            if entry.is_dir():
                hidden = entry.name.startswith(".") and entry.name not in _KEPT_DOT_DIRS
                if not (hidden or entry.name in _SKIPPED_DIRS or entry.name.endswith(".egg-info")):
                    stack.append(entry)
            elif entry.is_file():
                data = entry.read_bytes()
                if b"\0" not in data:  # images and other binaries
                    yield entry, data.decode("utf-8", errors="replace")


def text_of(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@functools.cache
def sections_of(doc: Path) -> list[str]:
    return [match["number"] for match in HEADING.finditer(text_of(doc))]


def outside_references(name: str, text: str) -> list[str]:
    return [
        f"{name}:{text.count(chr(10), 0, match.start()) + 1}: {match.group()!r} points at {what}, which is not in the "
        "repository; point at the docs/ section that says the same"
        for pattern, what in OUTSIDE
        for match in pattern.finditer(text)
    ]


def broken_references(name: str, text: str, *, own: Path | None = None) -> list[str]:
    """Every problem with the docs references in ``text`` (``own``: the docs file ``text`` is, for bare numbers)."""
    problems: list[str] = []
    if SECTION_SIGN not in text and "docs/" not in text:
        return problems  # most files: nothing to check, and the patterns are slow on megabytes of recorded streams
    covered: list[tuple[int, int]] = []

    def where(offset: int) -> str:
        return f"{name}:{text.count(chr(10), 0, offset) + 1}"

    for match in REFERENCE.finditer(text):
        covered.append(match.span())
        doc = match["doc"]
        if not doc.startswith("docs/"):
            problems.append(f"{where(match.start())}: {doc} is not a document in docs/; name docs/<file>.md")
            continue
        path = ROOT / doc
        if not path.is_file():
            problems.append(f"{where(match.start())}: {doc} does not exist")
            continue
        known = set(sections_of(path))
        for number in re.findall(r"\u00a7(\d+(?:\.\d+)*)", match["sections"]):
            if number not in known:
                problems.append(f"{where(match.start())}: {doc} has no section {number}")
    for match in BARE_DOC.finditer(text):
        if not any(start <= match.start() < end for start, end in covered) and not (ROOT / match.group()).is_file():
            problems.append(f"{where(match.start())}: {match.group()} does not exist")
    for offset in (m.start() for m in re.finditer(SECTION_SIGN, text)):
        if any(start <= offset < end for start, end in covered):
            continue
        number = re.match(r"\u00a7(\d+(?:\.\d+)*)", text[offset:])
        if own is None:
            problems.append(f"{where(offset)}: a section number without its document; write docs/<file>.md before it")
        elif number is None or number[1] not in sections_of(own):
            problems.append(f"{where(offset)}: this document has no section {text[offset : offset + 8]!r}")
    return problems


def missing_tests(name: str, text: str) -> list[str]:
    problems = []
    last: Path | None = None
    for match in TEST_NAME.finditer(text):
        if match["path"]:
            last = ROOT / match["path"]
            if not last.is_file():
                problems.append(f"{name}: {match['path']} does not exist")
                continue
        test = match["name"] or match["short"]
        if test is None:
            continue
        if last is None or not last.is_file():
            problems.append(f"{name}: ::{test} follows no test file")
        elif not re.search(rf"^(?:async )?def {test}\(", text_of(last), re.MULTILINE):
            problems.append(f"{name}: {last.relative_to(ROOT)} has no test {test}")
    return problems


def docs_files() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def test_no_file_points_outside_the_repository() -> None:
    problems = [
        problem
        for path, text in repository_texts()
        for problem in outside_references(str(path.relative_to(ROOT)), text)
    ]
    assert not problems, "\n".join(problems)


def test_every_docs_reference_names_a_document_and_a_section_that_exist() -> None:
    problems = []
    for path, text in repository_texts():
        own = path if path.parent == DOCS and path.suffix == ".md" else None
        problems += broken_references(str(path.relative_to(ROOT)), text, own=own)
    for doc in docs_files():
        for match in LINK.finditer(text_of(doc)):
            if not (DOCS / match["target"]).is_file():
                problems.append(f"docs/{doc.name}: the link to {match['target']} leads nowhere")
    assert not problems, "\n".join(problems)


def test_each_docs_section_number_is_used_once() -> None:
    assert {doc.name for doc in docs_files()} >= {"architecture.md", "computer-use.md", "cua-driver.md"}
    for doc in docs_files():
        numbers = sections_of(doc)
        assert numbers, f"docs/{doc.name} has no numbered sections"
        repeated = sorted({n for n in numbers if numbers.count(n) > 1})
        assert not repeated, f"docs/{doc.name} numbers these sections more than once: {repeated}"


def test_every_test_the_docs_name_exists() -> None:
    problems = [problem for doc in docs_files() for problem in missing_tests(f"docs/{doc.name}", text_of(doc))]
    assert not problems, "\n".join(problems)


def test_the_checks_find_what_they_are_for() -> None:
    """Each check, on text written to fail it (assembled here, so that this file itself stays clean)."""
    sign, shared, note, seed, missing = (
        SECTION_SIGN,
        "../" + "shared/x",
        "reference" + "/notes.md",
        "seeds" + "/3",
        "docs/",
    )
    assert len(outside_references("x.py", f"DESIGN {sign}4.3, {shared}, {note}, {seed}")) == 4
    assert outside_references("x.py", f"see docs/architecture.md {sign}4.3") == []

    assert broken_references("x.py", f"(docs/architecture.md {sign}4.3, {sign}4.11)") == []
    assert broken_references("x.py", f"(docs/architecture.md\n    {sign}4.3)") == []
    assert broken_references("x.py", f"(docs/architecture.md {sign}4.99)") == [
        "x.py:1: docs/architecture.md has no section 4.99"
    ]
    assert broken_references("x.py", f"({missing}none.md {sign}1)") == [f"x.py:1: {missing}none.md does not exist"]
    assert broken_references("x.py", f"(cua-driver.md {sign}4.1)")[0].endswith("name docs/<file>.md")
    assert broken_references("x.py", f"see {sign}4.1")[0].startswith("x.py:1: a section number without")
    own = DOCS / "architecture.md"
    assert broken_references("docs/architecture.md", f"as {sign}4.3 says", own=own) == []
    assert broken_references("docs/architecture.md", f"as {sign}99 says", own=own)

    this = "tests/unit/test_docs.py"
    assert (
        missing_tests("d.md", f"{this}::test_the_checks_find_what_they_are_for, ::test_every_test_the_docs_name_exists")
        == []
    )
    assert missing_tests("d.md", f"{this}::test_of_nothing") == [f"d.md: {this} has no test test_of_nothing"]
    gone = "tests/unit/" + "test_gone.py"
    assert missing_tests("d.md", gone) == [f"d.md: {gone} does not exist"]
