"""The recorded provider corpus (``corpus/``) as test cases: notes, scenarios, settings and expected views.

Each case is a note (``<id>.json``) with one or more recordings (raw SSE bytes) and, per recording, the
``expected`` result a faithful client assembles. This module turns a case into what the replay tests need:

* ``scenario`` serves the recordings byte for byte from the scripted model server (in chunks as small as three
  bytes, or cut at random with a seed), followed by a plain scripted answer for whatever request comes next;
* ``provider_options`` are the settings the README recommends for the service the case was recorded from:
  ``send_back`` left unset (whatever the stream carried goes back, whichever host serves it: the loopback server
  here stands in for a proxy in front of the service), ``think_tags`` for an R1 model that writes its reasoning
  inline; ``plain`` variants run with ``send_back = []`` and without ``think_tags``, to show nothing
  provider-specific is sent where it was not asked for;
* ``editor_view`` is what the editor should see of a recording under those settings: the note's text and
  thoughts, or, with ``think_tags``, the note's text split at the tags (a regex over the whole text, independent
  of the streaming splitter under test);
* ``recorded_blocks`` reads an Anthropic recording into the content blocks the API says it holds (text joined,
  tool inputs assembled), the oracle for what must go back in the next request.

Not a test module.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

CORPUS = Path(__file__).resolve().parent / "corpus"
FOLLOW_UP_TEXT = "Done."
"""What the scripted answer after the recordings says."""
Settings = Literal["recommended", "plain"]


@dataclass(frozen=True)
class Recording:
    file: Path
    status: int
    content_type: str
    expected: dict[str, Any]


@dataclass(frozen=True)
class Case:
    id: str
    kind: Literal["openai", "anthropic"]
    recordings: tuple[Recording, ...]
    repeat: bool
    note: dict[str, Any]

    @property
    def think_tags(self) -> bool:
        return self.id == "hf-deepseek-r1-think-tags"

    @property
    def carried(self) -> frozenset[str]:
        """The fields that may go back which the recordings carry (``reasoning_content``, ``reasoning_details``,
        ``extra_content``), read from the recorded chunks."""
        return frozenset().union(*(carried_fields(recording) for recording in self.recordings))

    @property
    def has_recommended_settings(self) -> bool:
        return self.think_tags or bool(self.carried)


def load_cases() -> list[Case]:
    cases = []
    for note_path in sorted(CORPUS.glob("*.json")):
        note = json.loads(note_path.read_text(encoding="utf-8"))
        recordings = tuple(
            Recording(
                file=CORPUS / item["file"],
                status=item["status"],
                content_type=item["content_type"],
                expected=item["expected"],
            )
            for item in note["responses"]
        )
        cases.append(Case(note["id"], note["kind"], recordings, bool(note.get("repeat")), note))
    return cases


CASES = load_cases()


def provider_options(case: Case, settings: Settings) -> dict[str, Any]:
    """``ProviderSettings`` fields for the provider serving ``case`` (its model id is the case id)."""
    recommended = settings == "recommended"
    options: dict[str, Any] = {"models": [{"id": case.id, "think_tags": recommended and case.think_tags}]}
    if case.kind == "openai" and not recommended:
        options["send_back"] = []
    return options


def scenario(case: Case, *, chunk_bytes: int, seed: int | None, attempts: int = 1) -> dict[str, Any]:
    """The recordings of ``case`` in order (a case whose note says ``repeat`` gets its recording once per attempt
    the provider makes), then a plain answer for any later request; all matched on the case's model id."""
    responses: list[dict[str, Any]] = [
        {
            "match": {"model": case.id},
            "recorded": {
                "file": str(recording.file),
                "status": recording.status,
                "content_type": recording.content_type,
                "chunk_bytes": chunk_bytes,
                "chunk_seed": seed,
            },
        }
        for recording in case.recordings
        for _ in range(attempts if case.repeat else 1)
    ]
    responses.append({"match": {"model": case.id}, "repeat": True, "steps": [{"text": FOLLOW_UP_TEXT}]})
    return {"name": f"corpus-{case.id}", "models": [case.id], "responses": responses}


_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)


def editor_view(recording: Recording, *, think_tags: bool) -> tuple[str, str]:
    """(text, thoughts) the editor should see of ``recording``."""
    expected = recording.expected
    text, thoughts = expected["text"], expected["thoughts"]
    if not think_tags:
        return text, thoughts
    inner = "".join(match.group(1).lstrip() for match in _THINK.finditer(text))
    outside = _THINK.split(text)[::2]
    answer = outside[0] + "".join(part.lstrip() for part in outside[1:])
    return answer, thoughts + inner


def sse_payloads(path: Path) -> list[dict[str, Any]]:
    """The JSON payloads of a recording's ``data:`` lines (``[DONE]`` and comments left out)."""
    payloads = []
    for block in path.read_bytes().decode("utf-8").split("\n\n"):
        data = "\n".join(line[5:].lstrip(" ") for line in block.split("\n") if line.startswith("data:"))
        if data and data != "[DONE]":
            payloads.append(json.loads(data))
    return payloads


def recorded_blocks(path: Path) -> list[dict[str, Any]]:
    """An Anthropic recording's content blocks as the API's message would hold them: text and thinking joined,
    signatures set, tool inputs parsed from their JSON fragments (``{}`` when they do not parse)."""
    blocks: dict[int, dict[str, Any]] = {}
    inputs: dict[int, list[str]] = {}
    for payload in sse_payloads(path):
        kind = payload.get("type")
        if kind == "content_block_start":
            blocks[payload["index"]] = dict(payload["content_block"])
        elif kind == "content_block_delta":
            block, delta = blocks[payload["index"]], payload["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] += delta["signature"]
            elif delta["type"] == "input_json_delta":
                inputs.setdefault(payload["index"], []).append(delta["partial_json"])
    for index, fragments in inputs.items():
        try:
            parsed = json.loads("".join(fragments)) if "".join(fragments).strip() else {}
        except ValueError:
            parsed = {}
        blocks[index]["input"] = parsed if isinstance(parsed, dict) else {}
    return [blocks[index] for index in sorted(blocks)]


def sent_back_blocks(path: Path) -> list[dict[str, Any]]:
    """What an Anthropic request must carry of that recording's answer: every block as recorded, except empty text
    and text citations (reasoning, tool calls and the blocks of Anthropic's own tools exactly as they came)."""
    out = []
    for block in recorded_blocks(path):
        if block["type"] == "text":
            if block["text"]:
                out.append({"type": "text", "text": block["text"]})
        elif block["type"] == "tool_use":
            out.append({"type": "tool_use", "id": block["id"], "name": block["name"], "input": block["input"]})
        else:
            out.append(block)
    return out


def carried_fields(recording: Recording) -> frozenset[str]:
    """The fields that may go back which an OpenAI-format recording carries in its chunks."""
    found = set()
    for delta in _deltas(recording.file):
        if delta.get("reasoning_content"):
            found.add("reasoning_content")
        if delta.get("reasoning_details"):
            found.add("reasoning_details")
        if any("extra_content" in call for call in delta.get("tool_calls") or []):
            found.add("extra_content")
    return frozenset(found)


def recorded_reasoning_content(recording: Recording) -> str:
    """Every ``delta.reasoning_content`` of an OpenAI-format recording, joined as it was sent."""
    return "".join(delta.get("reasoning_content") or "" for delta in _deltas(recording.file))


def _deltas(path: Path) -> list[dict[str, Any]]:
    return [
        choice.get("delta") or {}
        for payload in sse_payloads(path)
        for choice in payload.get("choices") or []
        if isinstance(choice, dict)
    ]


def openai_sent_back(recording: Recording, *, automatic: bool, think_tags: bool) -> dict[str, Any] | None:
    """The assistant message an OpenAI-format request must carry of that recording's answer (None: left out).
    ``automatic``: ``send_back`` is unset, so the reasoning a tool-calling answer carried goes back as it came."""
    expected = recording.expected
    text, _ = editor_view(recording, think_tags=think_tags)
    calls = expected["tool_calls"]
    if not text and not calls:
        return None
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": _sendable_arguments(call["arguments"])},
            }
            for call in calls
        ]
        reasoning = recorded_reasoning_content(recording)
        if automatic and reasoning:
            message["reasoning_content"] = reasoning
    return message


def _sendable_arguments(arguments: str) -> str:
    try:
        value = json.loads(arguments) if arguments.strip() else None
    except ValueError:
        return "{}"
    return arguments if isinstance(value, dict) else "{}"
