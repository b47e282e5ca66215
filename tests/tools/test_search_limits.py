"""list_files and search_files are bounded in time: ripgrep past the limit fails the call (the slower walker does not
take over), the Python walker past it answers what it found and says it stopped early."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from hermes_acp.errors import ToolTimeoutError
from hermes_acp.tools._finder import Finder
from hermes_acp.tools.listing import ListFilesTool
from hermes_acp.tools.search import SearchFilesTool

from .helpers import call, context

pytestmark = pytest.mark.anyio


def fake_rg(folder: Path, body: str) -> str:
    """An executable standing in for ``rg``."""
    path = folder / "fake-rg"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for name in ("a/one.py", "a/two.py", "b/three.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("needle\n")
    return root


async def test_a_slow_ripgrep_is_a_timeout_not_a_fallback(tmp_path: Path, workspace: Path) -> None:
    slow = fake_rg(tmp_path, "exec sleep 30")
    finder = Finder(slow, timeout_s=0.3)
    with anyio.fail_after(10):
        with pytest.raises(ToolTimeoutError, match=r"within 0\.3 s.*narrower path.*glob"):
            await finder.files(workspace, "*.py", cap=10)
        with pytest.raises(ToolTimeoutError, match=r"within 0\.3 s"):
            await finder.search(
                workspace, "needle", re.compile("needle"), literal=False, ignore_case=False, glob=None, cap=10
            )
        with pytest.raises(ToolTimeoutError):
            await call(SearchFilesTool(ripgrep=slow, timeout_s=0.3), context(workspace), pattern="needle")
        with pytest.raises(ToolTimeoutError):
            await call(ListFilesTool(ripgrep=slow, timeout_s=0.3), context(workspace), glob="*.py")
    assert finder.last_engine is None, "the walker did not take over"


async def test_a_failing_ripgrep_still_falls_back_to_the_walker(tmp_path: Path, workspace: Path) -> None:
    broken = fake_rg(tmp_path, "echo 'regex parse error' >&2; exit 2")
    finder = Finder(broken, timeout_s=10)
    with anyio.fail_after(10):
        found = await finder.files(workspace, "*.py", cap=10)
    assert finder.last_engine == "python"
    assert sorted(p.name for p in found.items) == ["one.py", "three.py", "two.py"]
    assert not found.stopped_early


async def test_the_walker_stops_at_the_limit_and_the_tools_say_so(workspace: Path) -> None:
    ctx = context(workspace)
    listed = await call(ListFilesTool(ripgrep=None, timeout_s=0), ctx, glob="*.py")
    assert listed.output["stopped_early"] is True
    assert "[The listing stopped early, after 0 s: files not reached yet are missing." in listed.text
    searched = await call(SearchFilesTool(ripgrep=None, timeout_s=0), ctx, pattern="needle")
    assert searched.output["stopped_early"] is True
    assert "[The search stopped early, after 0 s: files not reached yet were not searched." in searched.text
    complete = await call(SearchFilesTool(ripgrep=None), ctx, pattern="needle")
    assert complete.output["stopped_early"] is False
    assert complete.text.startswith("3 matches in 3 files:")
