"""``python -m probes.bench_against``: a row's figure is read off its value whatever the row prints, and a folder that
is not a checkout is refused before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from probes.bench_against import figure_of, main


@pytest.mark.parametrize(
    ("value", "figure"),
    [
        ("7.7 ms (min 7.2)", (7.7, "ms")),
        ("+7.9 %", (7.9, "%")),
        ("8,019 characters", (8019.0, "characters")),
        ("537 chunks/s", (537.0, "chunks/s")),
        ("n/a", None),
    ],
)
def test_a_row_s_figure_is_its_leading_number_and_unit(value: str, figure: tuple[float, str] | None) -> None:
    assert figure_of(value) == figure


def test_a_folder_that_is_not_a_checkout_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as refused:
        main([str(tmp_path), "--runs", "1"])
    assert refused.value.code == 2
