"""What the model and the editor get from an MCP result: cleaned text, capped size, saved images, public _meta."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from fixtures.mcp_server import ENGLAND_FLAG, HIDDEN_TAGS, solid_png
from hermes_acp.core import ImageBlock, ImagePart, ResourceBlock, ResourceLinkBlock, TextBlock, TextPart
from hermes_acp.core.sanitize import clean_text
from hermes_acp.mcp_client import parse_specs, public_meta
from hermes_acp.mcp_client.images import MAX_SAVED_IMAGES
from hermes_acp.mcp_client.results import outcome_from_result
from hermes_acp.mcp_client.specs import HttpSpec, StdioSpec, UnusableSpec
from hermes_acp.mcp_client.untrusted import RESULT_HEAD_SHARE
from hermes_acp.tools._text import cap_middle
from tests.fakes.cache_age import age_past_the_grace

pytestmark = pytest.mark.anyio


def test_tag_characters_are_stripped_but_subdivision_flags_survive() -> None:
    scotland = "\U0001f3f4" + "".join(chr(0xE0000 + ord(c)) for c in "gbsct") + "\U000e007f"
    text = f"England {ENGLAND_FLAG}, Scotland {scotland}.{HIDDEN_TAGS} Done"
    assert clean_text(text) == f"England {ENGLAND_FLAG}, Scotland {scotland}. Done"
    # Tags glued after a valid flag are removed; the flag stays whole.
    assert clean_text(ENGLAND_FLAG + HIDDEN_TAGS) == ENGLAND_FLAG
    # Tag letters without the black flag, or without CANCEL TAG, are not a flag.
    bare = "".join(chr(0xE0000 + ord(c)) for c in "gbeng") + "\U000e007f"
    assert clean_text("x" + bare) == "x"
    assert clean_text("\U0001f3f4" + bare[:-1]) == "\U0001f3f4"
    assert clean_text("plain") == "plain"


def test_reserved_meta_prefixes_are_dropped() -> None:
    meta = {
        "example.com/trace": 1,
        "progress": 2,
        "mcp/plain": 3,
        "mcp.dev/x": 4,
        "tools.mcp.com/y": 5,
        "api.modelcontextprotocol.org/z": 6,
        "MCP.Dev/upper": 7,
    }
    assert public_meta(meta) == {"example.com/trace": 1, "progress": 2, "mcp/plain": 3}
    assert public_meta(None) == {}


def test_long_text_keeps_head_and_tail_and_says_what_was_cut() -> None:
    text = "H" * 500 + "x" * 10_000 + "T" * 500
    capped, cut = cap_middle(text, 1000, head_share=RESULT_HEAD_SHARE)
    assert cut
    assert capped.startswith("H" * 400) and capped.endswith("T" * 500)
    assert "characters omitted" in capped and "11,000" in capped
    assert cap_middle("short", 1000, head_share=RESULT_HEAD_SHARE) == ("short", False)


async def test_text_results_are_cleaned_capped_and_keep_public_meta(tmp_path: Path) -> None:
    result = {
        "content": [{"type": "text", "text": f"a{HIDDEN_TAGS}b " + "y" * 300}],
        "structuredContent": {"answer": 42},
        "_meta": {"example.com/trace": "abc", "mcp.dev/internal": "x"},
        "isError": False,
    }
    outcome = await outcome_from_result(result, cache_dir=tmp_path, limit=100)
    assert not outcome.failed
    [part] = outcome.parts
    assert isinstance(part, TextPart)
    assert part.text.startswith("ab ") and "characters omitted" in part.text
    assert outcome.content == [TextBlock(text=part.text)]
    assert outcome.raw_output == {"structuredContent": {"answer": 42}, "_meta": {"example.com/trace": "abc"}}


async def test_structured_content_is_shown_when_there_is_no_text_and_errors_fail(tmp_path: Path) -> None:
    only_structured = await outcome_from_result({"content": [], "structuredContent": {"n": 1}}, cache_dir=tmp_path)
    assert only_structured.parts == [TextPart(text='{"n": 1}')]
    error = await outcome_from_result(
        {"content": [{"type": "text", "text": "no such file"}], "isError": True}, cache_dir=tmp_path
    )
    assert error.failed and error.error_code == "mcp_tool_error"
    assert error.parts == [TextPart(text="no such file")]


async def test_images_are_saved_and_shown_to_both_sides(tmp_path: Path) -> None:
    png = solid_png(4, 4, (1, 2, 3))
    data = base64.b64encode(png).decode()
    outcome = await outcome_from_result(
        {"content": [{"type": "text", "text": "look"}, {"type": "image", "data": data, "mimeType": "image/png"}]},
        cache_dir=tmp_path,
    )
    text, image = outcome.parts
    assert isinstance(text, TextPart) and isinstance(image, ImagePart)
    saved = Path(image.label or "")
    assert saved.parent == tmp_path / "images" and saved.read_bytes() == png
    assert image.data == data and image.media_type == "image/png"
    block = outcome.content[1]
    assert isinstance(block, ImageBlock) and block.data == data and block.uri == saved.as_uri()


async def test_at_most_twenty_images_are_kept(tmp_path: Path) -> None:
    for i in range(MAX_SAVED_IMAGES + 5):
        data = base64.b64encode(solid_png(2, 2, (i, 0, 0))).decode()
        await outcome_from_result(
            {"content": [{"type": "image", "data": data, "mimeType": "image/png"}]}, cache_dir=tmp_path
        )
    age_past_the_grace(tmp_path / "images")
    other = tmp_path / "images" / "screenshot-of-someone-else.png"
    other.write_bytes(b"x")
    data = base64.b64encode(solid_png(2, 2, (0, 0, 255))).decode()
    await outcome_from_result(
        {"content": [{"type": "image", "data": data, "mimeType": "image/png"}]}, cache_dir=tmp_path
    )
    ours = [p for p in (tmp_path / "images").iterdir() if p.name.startswith("mcp-")]
    assert len(ours) == MAX_SAVED_IMAGES
    assert other.exists()


async def test_other_blocks_become_markers_or_editor_blocks(tmp_path: Path) -> None:
    outcome = await outcome_from_result(
        {
            "content": [
                {"type": "image", "data": "not base64!", "mimeType": "image/png"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"},
                {"type": "resource", "resource": {"uri": "mem://n", "mimeType": "text/plain", "text": "note"}},
                {"type": "resource", "resource": {"uri": "mem://b", "blob": "AAAA"}},
                {"type": "hologram"},
            ]
        },
        cache_dir=tmp_path,
    )
    [part] = outcome.parts
    assert isinstance(part, TextPart)
    for marker in (
        "not valid base64",
        "audio is not supported",
        "resource link: file:///a.txt",
        "[resource mem://n]\nnote",
        "binary resource mem://b",
        "unsupported block (type='hologram')",
    ):
        assert marker in part.text
    assert ResourceLinkBlock(uri="file:///a.txt", name="a.txt") in outcome.content
    assert ResourceBlock(uri="mem://n", media_type="text/plain", text="note") in outcome.content


def test_specs_parse_the_acp_shapes_and_explain_what_cannot_be_used() -> None:
    specs = parse_specs(
        [
            {
                "name": "fs",
                "command": "npx",
                "args": ["-y", "fs"],
                "env": [{"name": "API_TOKEN", "value": "s3cret-value"}],
            },
            {
                "type": "http",
                "name": "web",
                "url": "http://127.0.0.1:1/mcp",
                "headers": [{"name": "Authorization", "value": "Bearer abcdefgh123"}],
            },
            {"type": "sse", "name": "old", "url": "http://127.0.0.1:1/sse", "headers": []},
            {"type": "acp", "name": "inproc", "id": "x"},
            {"name": "nocmd", "command": "", "args": [], "env": []},
            {"type": "http", "name": "ftp", "url": "ftp://x"},
        ],
        base_env={"PATH": "/usr/bin", "API_TOKEN": "ours"},
    )
    assert specs[0] == StdioSpec("fs", "npx", ("-y", "fs"), {"PATH": "/usr/bin", "API_TOKEN": "s3cret-value"})
    assert specs[1] == HttpSpec("web", "http://127.0.0.1:1/mcp", "http", {"Authorization": "Bearer abcdefgh123"})
    assert specs[2] == HttpSpec("old", "http://127.0.0.1:1/sse", "sse", {})
    assert isinstance(specs[3], UnusableSpec) and "'acp' are not supported" in specs[3].reason
    assert isinstance(specs[4], UnusableSpec) and isinstance(specs[5], UnusableSpec)


def test_spec_secrets_are_masked_in_logs() -> None:
    from hermes_acp.telemetry import redact

    parse_specs(
        [{"type": "http", "name": "w", "url": "http://x", "headers": [{"name": "X-Key", "value": "hdr-secret-42"}]}],
        base_env={},
    )
    env = [{"name": "MY_TOKEN", "value": "env-secret-42"}]
    parse_specs([{"name": "s", "command": "c", "args": [], "env": env}], base_env={})
    assert redact("sent hdr-secret-42 and env-secret-42") == "sent *** and ***"
