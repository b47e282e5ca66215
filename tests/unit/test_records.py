"""``sessions.records``: every path a client can send is either normalised or an invalid-params error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_acp.errors import InvalidParamsError
from hermes_acp.sessions.records import new_record

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("cwd", "additional", "field"),
    [
        ("/tmp/a\x00b", None, "cwd"),
        ("/" + "a" * 5000, None, "cwd"),
        (None, ["/tmp/a\x00b"], "additionalDirectories[0]"),
    ],
)
async def test_unusable_paths_are_invalid_params_naming_the_field(
    tmp_path: Path, cwd: str | None, additional: list[str] | None, field: str
) -> None:
    with pytest.raises(InvalidParamsError) as caught:
        await new_record(cwd or str(tmp_path), additional, None)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")
