"""ripgrep as the engine of ``list_files`` and ``search_files`` when ``rg`` is installed.

One invocation for both tools: hidden files included, ``.git`` skipped, ``.gitignore`` honoured with or without a git
repository and nothing else (no ``.ignore``/``.rgignore``, no global excludes, no config file), traversal sorted by
path so results are deterministic. ``_walk`` implements exactly this in Python; the tests hold the two to the same
results. Output is read as it comes and ripgrep is killed once ``cap`` records arrived; the whole run is bounded by
the caller's ``timeout_s``.

Any failure of ripgrep itself (a regex it cannot parse, a crash, an unreadable answer) raises ``RipgrepError`` so the
caller can fall back to the Python engine; running past ``timeout_s`` raises ``RipgrepTimeout``, a ``RipgrepError``
that is no reason to fall back (the walker would take longer still). It knows nothing about tools or the editor.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process
from anyio.streams.buffered import BufferedByteReceiveStream

from ._walk import MAX_SEARCH_FILE_BYTES, FileMatch, decode_line

__all__ = ["RipgrepError", "RipgrepTimeout", "find_ripgrep", "rg_list_files", "rg_search"]

_MAX_RECORD_BYTES = 64 * 1024 * 1024
_MAX_STDERR_BYTES = 8 * 1024
_COMMON = (
    "--no-config",
    "--hidden",
    "--no-require-git",
    "--no-ignore-dot",
    "--no-ignore-exclude",
    "--no-ignore-global",
    "--sort",
    "path",
)


class RipgrepError(Exception):
    """ripgrep could not answer (bad regex for its dialect, crash, unreadable output)."""


class RipgrepTimeout(RipgrepError):
    """ripgrep was still running when the time limit came; it was killed."""

    def __init__(self, timeout_s: float):
        super().__init__(f"ripgrep did not finish within {timeout_s:g} s")
        self.timeout_s = timeout_s


def find_ripgrep() -> str | None:
    return shutil.which("rg")


def _globs(glob: str | None) -> list[str]:
    # Later globs win in ripgrep: the user's glob first, then the .git exclusion.
    return [*(["--glob", glob] if glob else []), "--glob", "!.git"]


async def _drain(stream: ByteReceiveStream | None, sink: bytearray) -> None:
    if stream is None:
        return
    async for chunk in stream:
        if len(sink) < _MAX_STDERR_BYTES:
            sink.extend(chunk[: _MAX_STDERR_BYTES - len(sink)])


async def _stop(process: Process) -> None:
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            process.kill()
        with anyio.move_on_after(5):
            await process.wait()
        await process.aclose()


async def _read_records(reader: BufferedByteReceiveStream, delimiter: bytes, take: Callable[[bytes], bool]) -> bool:
    """True when ``take`` had enough before the output ended."""
    while True:
        try:
            record = await reader.receive_until(delimiter, _MAX_RECORD_BYTES)
        except (anyio.EndOfStream, anyio.IncompleteRead):
            return False
        except anyio.DelimiterNotFound as exc:
            raise RipgrepError("ripgrep printed a record too large to read") from exc
        if not take(record):
            return True


async def _run(
    argv: list[str], cwd: Path, delimiter: bytes, take: Callable[[bytes], bool], *, timeout_s: float
) -> None:
    """Feed each output record to ``take`` until it returns False (enough) or ripgrep ends, within ``timeout_s``."""
    stderr = bytearray()
    try:
        process = await anyio.open_process(
            argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except OSError as exc:
        raise RipgrepError(f"could not start ripgrep: {exc}") from exc
    stopped = False
    failure: RipgrepError | None = None
    try:
        with anyio.fail_after(timeout_s):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_drain, process.stderr, stderr)
                assert process.stdout is not None
                try:
                    stopped = await _read_records(BufferedByteReceiveStream(process.stdout), delimiter, take)
                except RipgrepError as exc:
                    failure = exc
                if stopped or failure is not None:
                    process.kill()
            returncode = await process.wait()
    except TimeoutError as exc:
        raise RipgrepTimeout(timeout_s) from exc
    finally:
        await _stop(process)
    if failure is not None:
        raise failure
    # 0: matches, 1: none, 2: an error (a regex ripgrep cannot parse, unreadable files): the fallback takes over.
    if not stopped and returncode not in (0, 1):
        message = stderr.decode("utf-8", errors="replace").strip()
        raise RipgrepError(message or f"ripgrep exited with status {returncode}")


async def rg_list_files(
    rg: str, root: Path, glob: str | None, *, cap: int, timeout_s: float
) -> tuple[list[Path], bool]:
    """Up to ``cap`` files under ``root`` (traversal order) and whether more exist."""
    found: list[Path] = []
    more = False

    def take(record: bytes) -> bool:
        nonlocal more
        if len(found) == cap:
            more = True
            return False
        found.append(root / record.decode("utf-8", errors="surrogateescape"))
        return True

    await _run([rg, "--files", "--null", *_COMMON, *_globs(glob)], root, b"\0", take, timeout_s=timeout_s)
    return found, more


def _text(field: dict[str, Any]) -> bytes:
    if "text" in field:
        return str(field["text"]).encode("utf-8", errors="surrogateescape")
    return base64.b64decode(field.get("bytes", ""))


async def rg_search(
    rg: str,
    root: Path,
    pattern: str,
    *,
    literal: bool,
    ignore_case: bool,
    glob: str | None,
    cap: int,
    timeout_s: float,
) -> tuple[list[FileMatch], bool]:
    """Up to ``cap`` matching lines under ``root`` (traversal order) and whether more exist."""
    found: list[FileMatch] = []
    more = False

    def take(record: bytes) -> bool:
        nonlocal more
        try:
            message = json.loads(record)
        except ValueError as exc:
            raise RipgrepError(f"unreadable ripgrep output: {record[:200]!r}") from exc
        if message.get("type") != "match":
            return True
        if len(found) == cap:
            more = True
            return False
        data = message["data"]
        relative = _text(data["path"]).decode("utf-8", errors="surrogateescape")
        line = _text(data["lines"])
        line = line.removesuffix(b"\n")
        found.append(FileMatch(path=root / relative, line=int(data["line_number"]), text=decode_line(line)))
        return True

    argv = [rg, "--json", "--max-filesize", str(MAX_SEARCH_FILE_BYTES), *_COMMON, *_globs(glob)]
    if literal:
        argv.append("--fixed-strings")
    if ignore_case:
        argv.append("--ignore-case")
    argv += ["--regexp", pattern]
    await _run(argv, root, b"\n", take, timeout_s=timeout_s)
    return found, more
