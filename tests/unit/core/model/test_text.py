"""Numbers in messages as KAI's Go code renders them."""

import pytest

from kai.core.model.text import BYTES_PER_GB, go_float, humanize


@pytest.mark.parametrize(("value", "text"), [(3.0, "3"), (0.5, "0.5"), (-2.0, "-2"), (1e21, "1e+21")])
def test_go_float(value: float, text: str) -> None:
    assert go_float(value) == text


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [(-1, 1.0, "Unlimited"), (2.5, 1.0, "2.5"), (1.23456, 1.0, "1.235"), (3e9, BYTES_PER_GB, "3"), (-0.0001, 1.0, "0")],
)
def test_humanize(value: float, unit: float, text: str) -> None:
    assert humanize(value, unit) == text
