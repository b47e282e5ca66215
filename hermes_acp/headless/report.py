"""What ``hermes-acp exec`` shows while a turn runs and keeps for its result: the ``Watcher`` of its ACP client.

``Transcript`` takes every ``session/update`` as it arrives: with ``--json`` it writes each one's params as a line
of NDJSON on stdout at once; always, it writes a progress line on stderr per tool call as it starts and as it ends
(and per permission the policy refused), and keeps what the result needs: each agent message's text (the final
answer is the last one that is not a notice of ours), the files the agent's edits changed (the ``diff`` content of
its completed calls), and the last context meter (its cost and ``[budget]`` caps). ``Spinner`` turns on stderr
while the turn runs, on a terminal only; a progress line clears it first. No ACP requests here, no exit codes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, Final

import anyio

from .policy import Verdict

__all__ = ["NOTICE_MARKS", "Spinner", "Transcript"]

NOTICE_MARKS: Final = ("⚠ ", "⛔ ")
"""How the server's own notices begin (``core.notice``, ``turns.budget``): never the model's answer."""
_FRAMES: Final = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SPIN_S: Final = 0.1


class Spinner:
    """A one-line spinner on a terminal (nothing elsewhere); ``line`` prints above it."""

    def __init__(self, err: IO[str], *, enabled: bool):
        self._err = err
        self._enabled = enabled
        self._shown = False
        self._started = time.monotonic()

    def line(self, text: str) -> None:
        self._clear()
        self._err.write(text + "\n")
        self._err.flush()

    async def run(self) -> None:
        """Spin until cancelled (then the line is cleared)."""
        if not self._enabled:
            return
        try:
            for n in range(1 << 62):
                seconds = time.monotonic() - self._started
                self._err.write(f"\r{_FRAMES[n % len(_FRAMES)]} working… {seconds:.0f} s")
                self._err.flush()
                self._shown = True
                await anyio.sleep(SPIN_S)
        finally:
            self._clear()

    def _clear(self) -> None:
        if self._shown:
            self._err.write("\r\033[2K")
            self._err.flush()
            self._shown = False


class Transcript:
    def __init__(self, cwd: Path, *, ndjson: Callable[[str], None] | None, say: Callable[[str], None]):
        self._cwd = cwd
        self._ndjson = ndjson
        """Where each update goes as a line of NDJSON (``--json``); None: nowhere."""
        self._say = say
        self._messages: dict[str, list[str]] = {}
        """Each agent message's text, by message id, in arrival order."""
        self._titles: dict[str, str] = {}
        self._ended: set[str] = set()
        self._diffs: dict[str, list[str]] = {}
        self._completed: set[str] = set()
        self.meter: dict[str, Any] | None = None
        """The last ``usage_update``."""

    # -- Watcher --------------------------------------------------------------------------------------------------

    def update(self, params: Mapping[str, Any]) -> None:
        if self._ndjson is not None:
            self._ndjson(json.dumps(params, ensure_ascii=False, separators=(",", ":")))
        update = params.get("update")
        if not isinstance(update, dict):
            return
        match update.get("sessionUpdate"):
            case "agent_message_chunk":
                content = update.get("content")
                if isinstance(content, dict) and isinstance(content.get("text"), str):
                    key = str(update.get("messageId") or f"unnamed-{len(self._messages)}")
                    self._messages.setdefault(key, []).append(content["text"])
            case "tool_call" | "tool_call_update":
                self._tool(update)
            case "usage_update":
                self.meter = dict(update)

    def refused(self, tool_call: Mapping[str, Any], verdict: Verdict) -> None:
        self._say(f"✗ refused: {_title(tool_call)} — {verdict.reason}; the turn ends here")

    def allowed(self, tool_call: Mapping[str, Any], verdict: Verdict) -> None:
        return None  # the call's own lines say it ran

    # -- what the result needs ------------------------------------------------------------------------------------

    @property
    def answer(self) -> str:
        """The last agent message that is not a notice of ours ("" when there is none)."""
        for parts in reversed(self._messages.values()):
            text = "".join(parts)
            if text.strip() and not text.lstrip().startswith(NOTICE_MARKS):
                return text.strip()
        return ""

    @property
    def files_changed(self) -> list[str]:
        """The files the agent's completed edits changed (relative to the cwd where inside it), in order."""
        seen: dict[str, None] = {}
        for call_id, paths in self._diffs.items():
            if call_id in self._completed:
                for path in paths:
                    seen.setdefault(_relative(path, self._cwd))
        return list(seen)

    def _tool(self, update: dict[str, Any]) -> None:
        call_id = str(update.get("toolCallId", ""))
        title = update.get("title")
        if isinstance(title, str) and title:
            self._titles[call_id] = title
        for item in update.get("content") or []:
            if isinstance(item, dict) and item.get("type") == "diff" and isinstance(item.get("path"), str):
                paths = self._diffs.setdefault(call_id, [])
                if item["path"] not in paths:
                    paths.append(item["path"])
        status = update.get("status")
        shown = self._titles.get(call_id, call_id)
        if update.get("sessionUpdate") == "tool_call":
            self._say(f"▸ {shown}")
        if status in ("completed", "failed") and call_id not in self._ended:
            self._ended.add(call_id)
            if status == "completed":
                self._completed.add(call_id)
            self._say(f"{'✓' if status == 'completed' else '✗'} {shown}{'' if status == 'completed' else ' (failed)'}")


def _title(tool_call: Mapping[str, Any]) -> str:
    title = tool_call.get("title")
    return title if isinstance(title, str) and title else str(tool_call.get("kind") or "a tool call")


def _relative(path: str, cwd: Path) -> str:
    try:
        return str(Path(path).relative_to(cwd))
    except ValueError:
        return path
