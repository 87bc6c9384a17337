"""The usage store of time-based fair share: windows, decay, normalisation to capacity, bounds, history round trip."""

from datetime import UTC, datetime

import numpy as np
import pytest

from kai.core.framework.usage.usage_config import UsageParams, WindowType
from kai.core.framework.usage.usage_store import MAX_BUCKETS, AllocationSample, UsageStore
from kai.core.framework.usage.usage_window import cron_reset, tumbling_reset, window_span

HOUR = 3600.0
T0 = 1_699_999_200.0
"""2023-11-14T22:00:00Z: on an hour (and so on every bucket boundary of these tests)."""


def sample(capacity_gpus: float, **gpus: float) -> AllocationSample:
    return AllocationSample((64000.0, 512e9, capacity_gpus), {q: (0.0, 0.0, g) for q, g in gpus.items()})


def gpu_usage(store: UsageStore, now: float) -> dict[str, float]:
    return {queue: round(u[2], 6) for queue, u in store.usage(now).items()}


def sliding(window_s: float, half_life_s: float | None = None) -> UsageParams:
    return UsageParams(window_s=window_s, half_life_s=half_life_s, staleness_s=10 * HOUR)


def test_sliding_window_counts_only_its_last_window_size() -> None:
    store = UsageStore(sliding(HOUR))
    store.record(T0, sample(16, a=16, b=0))
    store.record(T0 + 0.5 * HOUR, sample(16, a=0, b=16))
    assert gpu_usage(store, T0 + HOUR) == {"a": 0.5, "b": 0.5}
    assert gpu_usage(store, T0 + 1.25 * HOUR) == {"a": 0.25, "b": 0.75}
    assert gpu_usage(store, T0 + 1.5 * HOUR) == {"a": 0.0, "b": 1.0}


def test_usage_is_normalised_to_cluster_capacity() -> None:
    """KAI's example: 10 GPUs over 10 hours, a queue that used 8 GPUs for 3 hours scores 24/100."""
    store = UsageStore(sliding(10 * HOUR))
    store.record(T0, sample(10, a=8))
    store.record(T0 + 3 * HOUR, sample(10, a=0))
    assert gpu_usage(store, T0 + 10 * HOUR) == {"a": 0.24}


def test_capacity_that_changes_weighs_each_moment() -> None:
    """4 GPUs used of 8 for an hour, then 4 of 16 for an hour: 8 GPU-hours of 24."""
    store = UsageStore(sliding(2 * HOUR))
    store.record(T0, sample(8, a=4))
    store.record(T0 + HOUR, sample(16, a=4))
    assert gpu_usage(store, T0 + 2 * HOUR) == {"a": round(8 / 24, 6)}


def test_half_life_decay_weighs_recent_usage_more() -> None:
    """All 16 GPUs for one half-life, then idle for one: (0.5 - 0.25) / (1 - 0.25) of the decayed capacity."""
    half_life = 480.0  # 8 one-minute buckets, so the switch falls on a bucket boundary
    store = UsageStore(sliding(2 * half_life, half_life))
    store.record(T0, sample(16, a=16))
    store.record(T0 + half_life, sample(16, a=0))
    assert store.usage(T0 + 2 * half_life)["a"][2] == pytest.approx(1 / 3, rel=1e-9)
    undecayed = UsageStore(sliding(2 * half_life))
    undecayed.record(T0, sample(16, a=16))
    undecayed.record(T0 + half_life, sample(16, a=0))
    assert undecayed.usage(T0 + 2 * half_life)["a"][2] == pytest.approx(0.5)


def test_before_the_history_begins_the_cluster_counts_as_idle() -> None:
    """Ten minutes of the whole cluster are a sixth of a 1h window, not all of the ten minutes recorded; with decay,
    the idle past before them weighs what its age gives it."""
    store = UsageStore(sliding(HOUR))
    store.record(T0, sample(16, a=16))
    assert gpu_usage(store, T0 + 600) == {"a": round(1 / 6, 6)}
    half_life = 480.0
    decayed = UsageStore(sliding(7 * 24 * HOUR, half_life))
    decayed.record(T0, sample(16, a=16))
    decayed.record(T0 + half_life, sample(16, a=0))
    # used (0.5 - 0.25) of the decayed weight of an endless past (1): the idle time before counts in full
    assert decayed.usage(T0 + 2 * half_life)["a"][2] == pytest.approx(0.25, rel=1e-9)


def test_decay_makes_the_recent_user_the_heavier_one() -> None:
    """Same GPU-hours; b used them last, so b's usage is higher with decay and equal without."""
    for half_life, heavier in ((HOUR, "b"), (None, None)):
        store = UsageStore(sliding(4 * HOUR, half_life))
        store.record(T0, sample(16, a=16, b=0))
        store.record(T0 + 2 * HOUR, sample(16, a=0, b=16))
        usage = gpu_usage(store, T0 + 4 * HOUR)
        if heavier is None:
            assert usage["a"] == usage["b"] == 0.5
        else:
            assert usage["b"] > usage["a"]


def test_tumbling_window_restarts_at_each_boundary() -> None:
    params = UsageParams(window_type=WindowType.TUMBLING, window_s=HOUR, tumbling_start=T0, staleness_s=10 * HOUR)
    store = UsageStore(params)
    store.record(T0, sample(16, a=16, b=0))
    store.record(T0 + 50 * 60, sample(16, a=0, b=16))
    assert gpu_usage(store, T0 + 59 * 60) == {"a": round(50 / 59, 6), "b": round(9 / 59, 6)}
    assert gpu_usage(store, T0 + 70 * 60) == {"a": 0.0, "b": 1.0}


def test_cron_window_restarts_at_each_cron_time() -> None:
    params = UsageParams(window_type=WindowType.CRON, cron="0 * * * *", staleness_s=10 * HOUR)
    store = UsageStore(params)
    store.record(T0, sample(16, a=16, b=0))
    store.record(T0 + 50 * 60, sample(16, a=0, b=16))
    assert gpu_usage(store, T0 + 59 * 60) == {"a": round(50 / 59, 6), "b": round(9 / 59, 6)}
    assert gpu_usage(store, T0 + 90 * 60) == {"a": 0.0, "b": 1.0}


def at(*fields: int) -> float:
    return datetime(*fields, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("start", "size", "now", "reset"),
    [
        (at(2025, 1, 15, 10), HOUR, at(2025, 1, 15, 12, 30), at(2025, 1, 15, 12)),
        (at(2025, 1, 15, 10), HOUR, at(2025, 1, 15, 13), at(2025, 1, 15, 12)),  # at a boundary: the one before
        (at(2025, 1, 15, 10), HOUR, at(2025, 1, 15, 13, 0, 1), at(2025, 1, 15, 13)),
        (at(2025, 1, 1), 7 * 24 * HOUR, at(2025, 1, 18, 12), at(2025, 1, 15)),
        (at(2025, 1, 15, 10), HOUR, at(2025, 1, 15, 10), at(2025, 1, 15, 10)),
        (at(2025, 1, 15, 10, 15, 30), HOUR, at(2025, 1, 15, 12, 45, 30), at(2025, 1, 15, 12, 15, 30)),
        (at(2025, 2, 1), HOUR, at(2025, 1, 15), at(2025, 1, 15)),  # not begun yet: an empty window
    ],
)
def test_tumbling_reset_times(start: float, size: float, now: float, reset: float) -> None:
    assert tumbling_reset(start, size, now) == reset


@pytest.mark.parametrize(
    ("expression", "now", "reset"),
    [
        ("0 * * * *", at(2025, 1, 15, 14, 30), at(2025, 1, 15, 14)),
        ("0 * * * *", at(2025, 1, 15, 14), at(2025, 1, 15, 13)),  # at a cron time: the one before
        ("0 0 * * *", at(2025, 1, 15, 23, 59, 59), at(2025, 1, 15)),
        ("0 */6 * * *", at(2025, 1, 15, 12), at(2025, 1, 15, 6)),
        ("0 12 * * 1", at(2025, 1, 15, 15), at(2025, 1, 13, 12)),
        ("0 0 1 * *", at(2025, 3, 31, 23), at(2025, 3, 1)),
        ("*/15 * * * *", at(2025, 1, 15, 14, 37), at(2025, 1, 15, 14, 30)),
    ],
)
def test_cron_reset_times(expression: str, now: float, reset: float) -> None:
    assert cron_reset(expression, now) == reset


def test_a_monthly_cron_window_is_sized_for_the_longest_month() -> None:
    params = UsageParams(window_type=WindowType.CRON, cron="0 0 1 * *")
    assert window_span(params) == 31 * 24 * HOUR


def test_memory_is_bounded_by_the_bucket_count() -> None:
    store = UsageStore(sliding(7 * 24 * HOUR))
    assert store.slots == MAX_BUCKETS + 1
    for minute in range(0, 3 * 7 * 24 * 60, 7):
        store.record(T0 + minute * 60, sample(16, a=minute % 16, b=16 - minute % 16))
    history = store.history()
    assert len(history.ids) <= store.slots
    assert history.amounts.shape == (len(history.ids), 3, 3)


def test_decay_bounds_the_history_kept_to_its_horizon() -> None:
    """With a 10m half-life a week's window keeps only the last 300 minutes: ~70 s buckets instead of ~40 min."""
    store = UsageStore(sliding(7 * 24 * HOUR, 600.0))
    assert store.bucket_s == pytest.approx(300 * 60 / MAX_BUCKETS)


def test_a_gap_longer_than_the_staleness_period_is_charged_only_for_that_period() -> None:
    params = UsageParams(window_s=7 * HOUR, staleness_s=HOUR)
    store = UsageStore(params)
    store.record(T0, sample(16, a=16))
    store.record(T0 + HOUR, sample(16, a=16))
    # the scheduler was away for 5 hours: only the last hour of that is charged (2 of 3 charged hours are a's)
    store.record(T0 + 6 * HOUR, sample(16, a=0))
    assert gpu_usage(store, T0 + 7 * HOUR) == {"a": round(2 / 3, 6)}


def test_no_capacity_means_no_usage() -> None:
    store = UsageStore(sliding(HOUR))
    store.record(T0, sample(0, a=0))
    assert gpu_usage(store, T0 + HOUR) == {"a": 0.0}


def test_history_round_trip_gives_the_same_usage() -> None:
    store = UsageStore(sliding(2 * HOUR, 1800.0))
    for step in range(0, 100):
        store.record(T0 + step * 60, sample(16, a=step % 7, b=(3 * step) % 11))
    restored = UsageStore.restore(store.params, store.history())
    now = T0 + 100 * 60
    for queue, usage in store.usage(now).items():
        assert restored.usage(now)[queue] == pytest.approx(usage, rel=1e-12)


def test_restore_rebuckets_history_kept_with_other_params() -> None:
    """A history kept in 1-minute buckets, read back with 5-minute buckets (a longer window)."""
    store, direct = UsageStore(sliding(HOUR)), UsageStore(sliding(20 * HOUR))
    for kept in (store, direct):
        kept.record(T0, sample(16, a=16, b=0))
        kept.record(T0 + 30 * 60, sample(16, a=0, b=16))
    longer = UsageStore.restore(sliding(20 * HOUR), store.history())
    assert longer.bucket_s == pytest.approx(20 * HOUR / MAX_BUCKETS)
    expected = gpu_usage(direct, T0 + HOUR)
    assert gpu_usage(longer, T0 + HOUR) == {q: pytest.approx(u, rel=0.05) for q, u in expected.items()}


def test_history_drops_queues_that_left_no_trace() -> None:
    store = UsageStore(sliding(HOUR))
    store.record(T0, sample(16, a=4, gone=0))
    store.record(T0 + 60, sample(16, a=4))
    history = store.history()
    assert history.queues == ("a",)
    assert np.allclose(history.amounts[:, 1, 2].sum(), 4 * 60)
