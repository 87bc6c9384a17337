"""Durations as Kubernetes objects, KAI's flags and Prometheus write them, read into seconds and written back as Go's
``time.Duration.String`` does."""

import pytest

from kai.core.model.duration import format_duration, parse_duration, parse_prometheus_duration
from kai.core.model.errors import InvalidObject


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0.0), ("90s", 90.0), ("1m30s", 90.0), ("1.5h", 5400.0), ("-1s", -1.0), ("250ms", 0.25), ("3us", 3e-6)],
)
def test_go_durations_read_into_seconds(text: str, seconds: float) -> None:
    assert parse_duration(text, "x", "f") == pytest.approx(seconds)


def test_days_and_weeks_only_where_kai_takes_them() -> None:
    assert parse_duration("2d", "x", "f", days=True) == 2 * 86400.0
    with pytest.raises(InvalidObject, match="expected a duration such as 60s, 1m30s, 2h or -1s"):
        parse_duration("2d", "x", "f")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (45, "45s"), (1.5, "1.5s"), (600, "10m0s"), (5400, "1h30m0s"), (0.25, "250ms"), (-90, "-1m30s")],
)
def test_seconds_written_as_go_writes_a_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text, "x", "f") == pytest.approx(seconds)


def test_prometheus_durations() -> None:
    assert parse_prometheus_duration("1w", "x", "f") == 604800.0
    assert parse_prometheus_duration("2d12h", "x", "f") == 2.5 * 86400
    with pytest.raises(InvalidObject, match="expected a Prometheus duration"):
        parse_prometheus_duration("1.5h", "x", "f")
