"""``_session/steering``'s params read as claude-agent-acp and codex-acp read them (docs/architecture.md §6.9): a
non-empty prompt, ``idleBehavior`` only ``promptRequired``, and the same size bound as a prompt's."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_acp.core.bounds import MAX_PROMPT_BYTES
from hermes_acp.errors import InvalidParamsError
from hermes_acp.protocol.wire import SteeringParams, parse


def _params(**extra: Any) -> dict[str, Any]:
    return {"sessionId": "s1", "prompt": [{"type": "text", "text": "also the tests"}], **extra}


def test_the_peers_shapes_are_read() -> None:
    assert parse(SteeringParams, _params()).prompt_required is False
    asked = parse(SteeringParams, _params(_meta={"steering": {"idleBehavior": "promptRequired"}, "other": 1}))
    assert asked.prompt_required is True


@pytest.mark.parametrize(
    ("params", "field"),
    [
        (_params(prompt=[]), "prompt"),
        (_params(_meta={"steering": {"idleBehavior": "queue"}}), "_meta.steering.idleBehavior"),
        (_params(_meta="steer"), "_meta"),
        (_params(prompt=[{"type": "text", "text": "x" * (MAX_PROMPT_BYTES + 1)}]), "prompt"),
        ({"prompt": [{"type": "text", "text": "x"}]}, "sessionId"),
    ],
)
def test_what_the_peers_refuse_is_invalid_params_naming_the_field(params: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidParamsError) as refused:
        parse(SteeringParams, params)
    assert str(refused.value).startswith(f"{field}: ")
