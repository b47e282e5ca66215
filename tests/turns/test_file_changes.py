"""The file tools in the turn loop: each change's approval snapshot is stored with ``ToolCallRunning`` before the
file is written (persist before execute), a store that refuses that write leaves the file untouched, the change
reaches neither the editor nor the model, and a file changed between the approval and the write is refused with
the planned change on record."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import pytest

from hermes_acp.core import FileChange, SessionEvent, ToolCallRunning, ToolCallSettled
from hermes_acp.errors import StorageError
from hermes_acp.protocol.convert import event_updates
from hermes_acp.providers.scripted import ScriptedProvider, text_reply, tool_reply
from hermes_acp.storage import StoredEvent
from hermes_acp.tools.edit import EditFileTool
from hermes_acp.tools.files import WriteFileTool
from hermes_acp.turns import PermissionAnswer, PermissionQuestion
from tests.fakes.tools import call

from .support import Gate, open_loop

pytestmark = pytest.mark.anyio


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _running(events: Sequence[SessionEvent]) -> list[ToolCallRunning]:
    return [e for e in events if isinstance(e, ToolCallRunning)]


async def test_the_old_content_is_in_the_log_before_the_file_is_written(tmp_path: Path) -> None:
    target = tmp_path / "app.py"
    target.write_text("a = 1\n")
    provider = ScriptedProvider(
        [
            tool_reply(call("e1", "edit_file", path="app.py", edits=[{"old_text": "a = 1", "new_text": "a = 2"}])),
            text_reply("Done."),
        ]
    )
    loop = await open_loop(tmp_path, provider, tools=[EditFileTool()], gate=Gate(answers=["allow_once"]))
    on_disk_when_stored: list[bytes] = []
    append = loop.store.append_events

    async def watching(session_id: str, events: Sequence[SessionEvent]) -> list[StoredEvent]:
        if _running(events):
            on_disk_when_stored.append(target.read_bytes())
        return await append(session_id, events)

    loop.store.append_events = watching  # type: ignore[method-assign]
    await loop.turn("go")
    (running,) = _running(await loop.stored())
    assert running.file_changes == [
        FileChange(path=str(target), before="a = 1\n", before_sha256=_sha(b"a = 1\n"), after_sha256=_sha(b"a = 2\n"))
    ]
    assert on_disk_when_stored == [b"a = 1\n"], "stored while the file still held its old content"
    assert target.read_text() == "a = 2\n"


async def test_a_store_that_refuses_the_running_record_leaves_the_file_untouched(tmp_path: Path) -> None:
    provider = ScriptedProvider([tool_reply(call("w1", "write_file", path="new.md", content="x\n"))])
    loop = await open_loop(tmp_path, provider, tools=[WriteFileTool()], gate=Gate(answers=["allow_once"]))
    loop.store.refuse_once(lambda events: bool(_running(events)))
    with pytest.raises(StorageError):
        await loop.turn("go")
    assert loop.store.refused and _running(loop.store.refused[0])[0].file_changes[0].before is None
    assert not (tmp_path / "new.md").exists(), "the tool did not run"


async def test_the_change_reaches_neither_the_editor_nor_the_model(tmp_path: Path) -> None:
    secret = "old text the editor never needs to see again\n"
    (tmp_path / "notes.md").write_text(secret)
    provider = ScriptedProvider(
        [tool_reply(call("w1", "write_file", path="notes.md", content="new\n")), text_reply("Done.")]
    )
    loop = await open_loop(tmp_path, provider, tools=[WriteFileTool()], gate=Gate(answers=["allow_once"]))
    await loop.turn("go")
    (running,) = _running(loop.shown())
    assert running.file_changes[0].before == secret, "the live event is the stored one"
    assert event_updates(running, live=True) == event_updates(
        running.model_copy(update={"file_changes": []}), live=True
    )
    assert secret not in str(provider.requests[-1].messages[-1])


async def test_a_file_changed_between_its_approval_and_the_write_is_refused_with_the_change_on_record(
    tmp_path: Path,
) -> None:
    target = tmp_path / "app.py"
    target.write_text("a = 1\n")

    class EditsWhileAsked(Gate):
        async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
            target.write_text("a = 1\nb = 3\n")
            return await super().ask(question)

    provider = ScriptedProvider(
        [
            tool_reply(call("e1", "edit_file", path="app.py", edits=[{"old_text": "a = 1", "new_text": "a = 2"}])),
            text_reply("I will read it again."),
        ]
    )
    loop = await open_loop(tmp_path, provider, tools=[EditFileTool()], gate=EditsWhileAsked(answers=["allow_once"]))
    await loop.turn("go")
    stored = await loop.stored()
    (running,) = _running(stored)
    (settled,) = [e for e in stored if isinstance(e, ToolCallSettled)]
    assert running.file_changes[0].before == "a = 1\n"
    assert settled.status == "failed" and settled.result is not None
    assert "app.py changed after this change was computed and shown for approval" in str(settled.result.parts)
    assert target.read_text() == "a = 1\nb = 3\n"
