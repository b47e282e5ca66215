"""The one image gate: routes by image_input_mode / vision / auxiliary.vision; native pixels fit the budget off the
event loop, at most 4 per result; the auxiliary route is one bounded provider request with the scale stated;
prompt images go through the same gate."""

from __future__ import annotations

import base64
import io
import random
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from PIL import Image

from hermes_acp.config import load_settings
from hermes_acp.core import DisplayBlock, ImageBlock, ImagePart, TextBlock, TextPart, ToolResultMessage, UserMessage
from hermes_acp.core.notice import Notice
from hermes_acp.errors import ProviderUnavailableError
from hermes_acp.images import codec as images_module
from hermes_acp.images import gate as gate_module
from hermes_acp.images.gate import SessionImageGate
from hermes_acp.providers.base import ProviderRequest
from hermes_acp.providers.catalog import CatalogModel, ModelCatalog
from hermes_acp.providers.describe import describer_for
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.providers.scripted import ScriptedProvider, ScriptedReply, text_reply
from hermes_acp.tools.context import ApprovalRequest, Workspace
from hermes_acp.turns.prompt_input import convert_prompt
from hermes_acp.turns.request import build_request
from tests.fakes.sandbox_pin import pin_sandbox

from .support import catalog_model

pytestmark = pytest.mark.anyio

AUX = catalog_model("aux:vl", vision=True)


def noisy_png(width: int, height: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    image = Image.frombytes("RGB", (width, height), rng.randbytes(width * height * 3))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def size_of(part: ImagePart) -> tuple[int, int]:
    return Image.open(io.BytesIO(base64.b64decode(part.data))).size


def make_gate(
    tmp_path: Path,
    config: str,
    *,
    vision: bool,
    aux_steps: Sequence[ScriptedReply] = (),
) -> tuple[SessionImageGate, ScriptedProvider]:
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(pin_sandbox(config))
    settings = load_settings({}, home=home)
    main = catalog_model(vision=vision)
    aux_provider = ScriptedProvider(aux_steps, provider_id="aux")
    registry = ProviderRegistry(settings, {}, overrides={"aux": aux_provider})
    describer = describer_for(settings, ModelCatalog([main, AUX], main.id), registry)
    gate = SessionImageGate(settings, model=lambda: main, describer=describer)
    return gate, aux_provider


AUX_CONFIG = '[auxiliary.vision]\nmodel = "aux:vl"\n'


@pytest.mark.parametrize(
    ("config", "vision", "route"),
    [
        ("", True, "native"),
        ("", False, "text"),
        (AUX_CONFIG, True, "auxiliary"),
        (AUX_CONFIG, False, "auxiliary"),
        ('[agent]\nimage_input_mode = "native"\n', False, "native"),
        ('[agent]\nimage_input_mode = "text"\n', True, "text"),
        ('[agent]\nimage_input_mode = "text"\n' + AUX_CONFIG, True, "auxiliary"),
    ],
)
def test_the_route_follows_mode_vision_and_auxiliary_vision(
    tmp_path: Path, config: str, vision: bool, route: str
) -> None:
    gate, _ = make_gate(tmp_path, config, vision=vision)
    assert gate.route() == route


async def test_native_images_fit_the_byte_budget_and_1568_px_at_most_4_per_result(tmp_path: Path) -> None:
    gate, _ = make_gate(tmp_path, "[vision]\nembed_target_bytes = 65536\n", vision=True)
    big = ImagePart(media_type="image/png", data=noisy_png(2400, 1200), label="shot")
    small = ImagePart(media_type="image/png", data=noisy_png(40, 30), label="tiny")
    gated = await gate.admit([big, small, small, small, small, small], purpose="test images")
    images = [p for p in gated.parts if isinstance(p, ImagePart)]
    notes = [p.text for p in gated.parts if isinstance(p, TextPart)]
    assert len(images) == 4 and len(notes) == 2 and "at most 4" in notes[0]
    assert len(base64.b64decode(images[0].data)) <= 65536
    assert max(size_of(images[0])) <= 1568
    assert gated.scales[0] is not None and gated.scales[0] == pytest.approx(size_of(images[0])[0] / 2400, rel=0.01)
    assert gated.scales[1] == 1.0


async def test_resizing_runs_off_the_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[bool] = []
    real_fit = images_module.fit

    def spy(*args: object, **kwargs: object) -> object:
        threads.append(threading.current_thread() is threading.main_thread())
        return real_fit(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(gate_module, "fit", spy)
    gate, _ = make_gate(tmp_path, "", vision=True)
    await gate.admit([ImagePart(media_type="image/png", data=noisy_png(1800, 300))], purpose="x")
    assert threads == [False]


async def test_the_auxiliary_route_asks_once_with_a_1456_px_image_and_the_scale_factor(tmp_path: Path) -> None:
    gate, aux = make_gate(tmp_path, AUX_CONFIG, vision=False, aux_steps=[text_reply("A calculator showing 5.")])
    gated = await gate.admit(
        [ImagePart(media_type="image/png", data=noisy_png(2912, 400))], purpose="a screenshot", hint="[0] button '5'"
    )
    assert gated.route == "auxiliary"
    assert len(aux.requests) == 1
    request: ProviderRequest = aux.requests[0]
    message = request.messages[0]
    assert isinstance(message, UserMessage) and request.model == "vl"
    prompt = next(p.text for p in message.parts if isinstance(p, TextPart))
    sent = next(p for p in message.parts if isinstance(p, ImagePart))
    assert max(size_of(sent)) <= 1456
    assert "scale factor 0.5000" in prompt and "ORIGINAL pixel" in prompt and "[0] button '5'" in prompt
    assert isinstance(gated.parts[0], TextPart) and "A calculator showing 5." in gated.parts[0].text


async def test_a_failed_auxiliary_request_falls_back_to_the_text_only_element_list(tmp_path: Path) -> None:
    failing = ScriptedReply(parts=[], error=ProviderUnavailableError("down", provider="aux"))
    gate, aux = make_gate(tmp_path, AUX_CONFIG, vision=False, aux_steps=[failing])
    gated = await gate.admit(
        [ImagePart(media_type="image/png", data=noisy_png(50, 50))], purpose="x", fallback="ELEMENT LIST"
    )
    assert (gated.route, gated.parts) == ("text", [TextPart(text="ELEMENT LIST")])
    assert len(aux.requests) == 1


async def test_prompt_images_go_through_the_gate(tmp_path: Path) -> None:
    async def never(_path: Path, _request: ApprovalRequest) -> None:
        raise AssertionError("no outside reads here")

    blocks: list[DisplayBlock] = [
        TextBlock(text="what is this?"),
        ImageBlock(media_type="image/png", data=noisy_png(2000, 500)),
    ]
    native, _ = make_gate(tmp_path / "a", "", vision=True)
    text_only, _ = make_gate(tmp_path / "b", "", vision=False)
    workspace = Workspace(tmp_path)
    as_pixels = await convert_prompt(blocks, workspace=workspace, ask_outside=never, images=native)
    as_note = await convert_prompt(blocks, workspace=workspace, ask_outside=never, images=text_only)
    pixels = as_pixels.message.parts[1]
    assert isinstance(pixels, ImagePart) and max(size_of(pixels)) <= 1568
    assert isinstance(as_note.message.parts[1], TextPart) and "not shown" in as_note.message.parts[1].text


def test_native_route_keeps_tool_images_for_a_model_the_catalog_marks_without_vision() -> None:
    history = [ToolResultMessage(tool_call_id="c", name="t", parts=[ImagePart(media_type="image/png", data="AA==")])]
    model: CatalogModel = catalog_model(vision=False)
    kept = build_request(model=model, system="", history=history, tools=[], native_images=True)
    dropped = build_request(model=model, system="", history=history, tools=[])
    kept_message, dropped_message = kept.messages[0], dropped.messages[0]
    assert isinstance(kept_message, ToolResultMessage) and isinstance(dropped_message, ToolResultMessage)
    assert isinstance(kept_message.parts[0], ImagePart) and isinstance(dropped_message.parts[0], TextPart)


@pytest.mark.parametrize(
    ("config", "vision", "title"),
    [
        ("", False, "Images reach the model as text only"),
        (AUX_CONFIG, False, "Images reach the model as text: the auxiliary vision model failed"),
    ],
)
async def test_a_downgrade_to_text_is_told_once(tmp_path: Path, config: str, vision: bool, title: str) -> None:
    failing = ScriptedReply(parts=[], error=ProviderUnavailableError("down", provider="aux"))
    gate, _ = make_gate(tmp_path, config, vision=vision, aux_steps=[failing, failing])
    told: list[Notice] = []

    async def notify(notice: Notice) -> None:
        told.append(notice)

    gate.notify = notify
    image = [ImagePart(media_type="image/png", data=noisy_png(20, 20))]
    await gate.admit(image, purpose="a screenshot", fallback="ELEMENTS")
    await gate.admit(image, purpose="a screenshot", fallback="ELEMENTS")
    assert [n.title for n in told] == [title]
    assert told[0].severity == "warning"


async def test_no_notice_when_the_user_chose_text_or_pixels_arrive(tmp_path: Path) -> None:
    told: list[Notice] = []

    async def notify(notice: Notice) -> None:
        told.append(notice)

    image = [ImagePart(media_type="image/png", data=noisy_png(20, 20))]
    for config, vision in (('[agent]\nimage_input_mode = "text"\n', True), ("", True)):
        gate, _ = make_gate(tmp_path / str(len(told)) / config[:3], config, vision=vision)
        gate.notify = notify
        await gate.admit(image, purpose="a screenshot", fallback="ELEMENTS")
    assert told == []
