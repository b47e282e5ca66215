"""Prompt content reaches the model without silent loss: text, images, resource links, embedded resources, audio."""

from __future__ import annotations

import base64
import contextlib
import os
import threading
from pathlib import Path

import anyio
import pytest
from acp import schema

from hermes_acp.core import ImagePart, TextPart, UserMessage
from hermes_acp.providers.scripted import ScriptedProvider, text_reply
from hermes_acp.turns.prompt_input import MAX_ATTACHMENT_BYTES
from tests.fakes.server import open_pair, scripted_model

pytestmark = pytest.mark.anyio
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()


def _user_parts(provider: ScriptedProvider) -> list[TextPart | ImagePart]:
    message = provider.requests[0].messages[0]
    assert isinstance(message, UserMessage)
    return list(message.parts)


async def test_images_go_natively_to_vision_models(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("a cat")])
    async with open_pair(tmp_path, provider=provider, models=[scripted_model(vision=True)]) as pair:
        session_id = await pair.new_session()
        await pair.conn.prompt(
            session_id=session_id,
            prompt=[
                schema.TextContentBlock(type="text", text="what is this?"),
                schema.ImageContentBlock(type="image", data=PNG, mime_type="image/png"),
            ],
        )
    parts = _user_parts(provider)
    assert parts[0] == TextPart(text="what is this?")
    assert isinstance(parts[1], ImagePart)
    assert parts[1].data == PNG


async def test_an_image_only_first_prompt_leaves_the_title_to_the_first_prompt_with_text(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("a cat"), text_reply("Mittens")])
    async with open_pair(tmp_path, provider=provider, models=[scripted_model(vision=True)]) as pair:
        session_id = await pair.new_session()
        await pair.conn.prompt(
            session_id=session_id, prompt=[schema.ImageContentBlock(type="image", data=PNG, mime_type="image/png")]
        )
        await pair.prompt(session_id, "Name the cat")
        await pair.client.wait_for(lambda: bool(pair.client.of_kind("session_info_update", session_id)))
        titles = [u["title"] for u in pair.client.of_kind("session_info_update", session_id)]
    assert titles == ["Name the cat"]


async def test_images_for_a_model_without_vision_become_a_clear_note(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("cannot see")])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        await pair.conn.prompt(
            session_id=session_id, prompt=[schema.ImageContentBlock(type="image", data=PNG, mime_type="image/png")]
        )
    (part,) = _user_parts(provider)
    assert isinstance(part, TextPart)
    assert "has no vision" in part.text


async def test_resource_link_inside_the_workspace_is_read(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("read it")])
    async with open_pair(tmp_path, provider=provider) as pair:
        target = pair.workspace / "notes.md"
        target.write_text("# Notes\nremember the milk\n")
        session_id = await pair.new_session()
        await pair.conn.prompt(
            session_id=session_id,
            prompt=[schema.ResourceContentBlock(type="resource_link", uri=target.as_uri(), name="notes.md")],
        )
    (part,) = _user_parts(provider)
    assert isinstance(part, TextPart)
    assert "remember the milk" in part.text
    assert pair.client.permissions == []


async def test_resource_link_outside_the_workspace_asks_first(tmp_path: Path) -> None:
    outside = tmp_path / "secret-plan.txt"
    outside.write_text("outside content")
    provider = ScriptedProvider([text_reply("ok"), text_reply("ok")])
    async with open_pair(tmp_path, provider=provider) as pair:
        pair.client.answers = ["reject_once", "allow_once"]
        session_id = await pair.new_session()
        link = schema.ResourceContentBlock(type="resource_link", uri=outside.as_uri(), name="secret-plan.txt")
        await pair.conn.prompt(session_id=session_id, prompt=[link])
        refused = _user_parts(provider)
        await pair.conn.prompt(session_id=session_id, prompt=[link])
        allowed = provider.requests[1].messages[-1]
        asked = [p.tool_call for p in pair.client.permissions]
        cards = pair.client.of_kind("tool_call", session_id)
    assert "not read" in refused[0].text  # type: ignore[union-attr]
    assert isinstance(allowed, UserMessage)
    assert "outside content" in allowed.parts[0].text  # type: ignore[union-attr]
    assert len(asked) == 2
    assert [c["toolCallId"] for c in cards] == [a["toolCallId"] for a in asked]
    assert cards[0]["kind"] == "read"


async def test_resource_link_outside_is_refused_in_read_only_mode(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("do not read")
    provider = ScriptedProvider([text_reply("ok")])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        await pair.conn.set_session_mode(session_id=session_id, mode_id="read_only")
        await pair.conn.prompt(
            session_id=session_id,
            prompt=[schema.ResourceContentBlock(type="resource_link", uri=outside.as_uri(), name="elsewhere.txt")],
        )
    (part,) = _user_parts(provider)
    assert "do not read" not in part.text  # type: ignore[union-attr]
    assert "read_only" in part.text  # type: ignore[union-attr]
    assert pair.client.permissions == []


async def test_embedded_resources_and_audio(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("noted")])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        await pair.conn.prompt(
            session_id=session_id,
            prompt=[
                schema.EmbeddedResourceContentBlock(
                    type="resource",
                    resource=schema.TextResourceContents(
                        uri="file:///x/main.py", text="print('hi')", mime_type="text/x-python"
                    ),
                ),
                schema.EmbeddedResourceContentBlock(
                    type="resource",
                    resource=schema.BlobResourceContents(
                        uri="file:///x/data.bin", blob="AAEC", mime_type="application/octet-stream"
                    ),
                ),
                schema.AudioContentBlock(type="audio", data="UklGRg==", mime_type="audio/wav"),
            ],
        )
        shown = pair.client.text(session_id)
    parts = _user_parts(provider)
    assert parts == [TextPart(text="[Attached: file:///x/main.py]\nprint('hi')")]
    assert "Audio in the prompt is not forwarded" in shown
    assert "data.bin is binary" in shown


def _feed(fifo: Path, stop: threading.Event) -> None:
    """Write more than the attachment limit into ``fifo`` and keep it open (a file with no end) until ``stop``."""
    with contextlib.suppress(BrokenPipeError), fifo.open("wb") as out:
        out.write(b"#" * (MAX_ATTACHMENT_BYTES + 4096))
        out.flush()
        stop.wait(10)  # bounded: a reader that waits for the end gets it after this


async def test_a_linked_file_is_read_only_up_to_the_limit(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("ok")])
    async with open_pair(tmp_path, provider=provider) as pair:
        endless = pair.workspace / "endless.log"
        os.mkfifo(endless)
        stop = threading.Event()
        writer = threading.Thread(target=_feed, args=(endless, stop), daemon=True)
        writer.start()
        try:
            session_id = await pair.new_session()
            with anyio.fail_after(5):
                await pair.conn.prompt(
                    session_id=session_id,
                    prompt=[schema.ResourceContentBlock(type="resource_link", uri=endless.as_uri(), name="endless")],
                )
        finally:
            stop.set()
            os.close(os.open(endless, os.O_RDONLY | os.O_NONBLOCK))  # frees a writer still waiting for a reader
            writer.join(5)
    (part,) = _user_parts(provider)
    assert isinstance(part, TextPart)
    assert "#" * MAX_ATTACHMENT_BYTES + "\n[... truncated: the file has more than" in part.text
    assert "#" * (MAX_ATTACHMENT_BYTES + 1) not in part.text


async def test_a_long_utf8_file_cut_inside_a_character_is_still_text(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("ok")])
    async with open_pair(tmp_path, provider=provider) as pair:
        notes = pair.workspace / "notes.md"
        notes.write_text("a" * (MAX_ATTACHMENT_BYTES - 1) + "é and more", encoding="utf-8")
        session_id = await pair.new_session()
        await pair.conn.prompt(
            session_id=session_id,
            prompt=[schema.ResourceContentBlock(type="resource_link", uri=notes.as_uri(), name="notes.md")],
        )
    (part,) = _user_parts(provider)
    assert isinstance(part, TextPart)
    assert "a" * (MAX_ATTACHMENT_BYTES - 1) + "\n[... truncated: the file has" in part.text
