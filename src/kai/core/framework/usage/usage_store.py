"""The usage store of time-based fair share: what each queue was allocated over time, and its usage now.

The scheduler records, once a cycle, the cluster's capacity and every queue's allocation (an ``AllocationSample``);
a sample holds until the next one. The store adds sample × seconds into time buckets, the cluster's capacity-seconds
beside the queues' resource-seconds, so memory stays bounded: at most ``MAX_BUCKETS`` buckets (each at least
``queryResolution`` long) over the longest window, or over ``DECAY_HORIZON`` half-lives when usage decays.

A queue's usage of a resource is what KAI's Prometheus query computes: the decayed sum of its allocation over the
current window divided by the decayed sum of the cluster's capacity over the same window, each second weighted by
``0.5^(age / halfLifePeriod)`` — a number between 0 and 1, the share of the cluster the queue used
(docs/time-based-fairshare). Before the history begins the cluster counts as idle (with the capacity first
recorded), so a queue's first minutes weigh as a small part of a whole window, as they do in KAI against a
Prometheus that has recorded capacity all along (docs/deviations.md). A gap in the history longer than
``stalenessPeriod`` (the scheduler was not running) is charged only for ``stalenessPeriod``.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from kai.core.framework.usage.usage_config import UsageParams
from kai.core.framework.usage.usage_window import window_span, window_start

Quantities = tuple[float, float, float]
"""cpu millicores, memory bytes, GPUs (KAI's resource order)."""
MAX_BUCKETS = 256
DECAY_HORIZON = 30.0
"""Half-lives after which history no longer counts (its weight is below 1e-9)."""
Floats = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class AllocationSample:
    """What the cluster held at a moment: its capacity and each queue's allocation (ancestors include children)."""

    capacity: Quantities
    queues: Mapping[str, Quantities]


@dataclass(frozen=True, slots=True)
class UsageHistory:
    """The store's contents as plain arrays, to persist and restore: bucket ``ids[i]`` spans
    ``[ids[i]·bucket_s, (ids[i]+1)·bucket_s)`` and was charged from ``first[i]`` to ``last[i]``; ``amounts[i, 0]`` are
    the capacity-seconds (cpu, memory, gpu), ``amounts[i, 1 + j]`` queue ``queues[j]``'s resource-seconds."""

    bucket_s: float
    queues: tuple[str, ...]
    ids: NDArray[np.int64]
    first: Floats
    last: Floats
    amounts: Floats
    held: AllocationSample | None = None
    held_at: float | None = None


class UsageStore:
    def __init__(self, params: UsageParams) -> None:
        self.params = params
        span = window_span(params)
        if params.half_life_s is not None:
            span = min(span, DECAY_HORIZON * params.half_life_s)
        self.bucket_s = max(params.query_resolution_s, span / MAX_BUCKETS)
        self.slots = math.ceil(span / self.bucket_s) + 1
        self._ids = np.full(self.slots, -1, dtype=np.int64)
        self._first = np.zeros(self.slots)
        self._last = np.zeros(self.slots)
        self._amounts = np.zeros((self.slots, 1, 3))
        self._columns: dict[str, int] = {}
        self._held: AllocationSample | None = None
        self._held_vector: Floats | None = None
        self._held_at: float | None = None

    @property
    def queues(self) -> tuple[str, ...]:
        return tuple(self._columns)

    def record(self, now: float, sample: AllocationSample) -> None:
        """The cluster as it is from ``now`` on; what was recorded before is charged up to ``now``."""
        self._charge_to(now)
        for queue in sample.queues:
            if queue not in self._columns:
                self._columns[queue] = len(self._columns) + 1
        if self._amounts.shape[1] < len(self._columns) + 1:
            wider = np.zeros((self.slots, len(self._columns) + 1, 3))
            wider[:, : self._amounts.shape[1]] = self._amounts
            self._amounts = wider
        self._held, self._held_at = sample, now
        self._held_vector = self._vector(sample)

    def usage(self, now: float) -> dict[str, Quantities]:
        """Every queue's usage at ``now``: its share (0..1) of the cluster's capacity over the current window."""
        self._charge_to(now)
        if not self._columns:
            return {}
        start = window_start(self.params, now)
        used = self._ids >= 0
        covered = np.where(used, self._last - self._first, 1.0)
        weights = np.where(used, self._integral(np.maximum(self._first, start), np.minimum(self._last, now), now), 0.0)
        totals = np.einsum("s,scr->cr", weights / covered, self._amounts)
        capacity = totals[0]
        earliest = int(np.argmin(np.where(used, self._first, np.inf)))
        if used[earliest] and start < self._first[earliest]:
            # before the history begins the cluster counts as idle, with the capacity it was first recorded with
            rate = self._amounts[earliest, 0] / covered[earliest]
            capacity = capacity + rate * self._integral(np.array(start), np.array(self._first[earliest]), now)
        shares = np.divide(totals[1:], capacity, out=np.zeros_like(totals[1:]), where=capacity > 0)
        return {queue: (float(s[0]), float(s[1]), float(s[2])) for queue, s in zip(self._columns, shares, strict=True)}

    def _integral(self, low: Floats, high: Floats, now: float) -> Floats:
        """The weight of the seconds from ``low`` to ``high`` at ``now``: their length, or with a half-life the
        integral of ``0.5^(age / halfLife)`` over them (0 where ``high <= low``)."""
        length = np.maximum(high - low, 0.0)
        half_life = self.params.half_life_s
        if half_life is None:
            return length
        ages = (np.maximum(now - high, 0.0), np.maximum(now - low, 0.0))
        decayed = half_life / math.log(2) * (0.5 ** (ages[0] / half_life) - 0.5 ** (ages[1] / half_life))
        return np.where(length > 0, decayed, 0.0)

    def history(self) -> UsageHistory:
        """The buckets in time order, without queues that hold nothing and used nothing in them."""
        order = np.argsort(self._ids)
        order = order[self._ids[order] >= 0]
        amounts = self._amounts[order]
        held = self._held.queues if self._held is not None else {}
        keep = [q for q, c in self._columns.items() if q in held or amounts[:, c].any()]
        columns = [0, *(self._columns[q] for q in keep)]
        return UsageHistory(
            self.bucket_s,
            tuple(keep),
            self._ids[order].copy(),
            self._first[order].copy(),
            self._last[order].copy(),
            amounts[:, columns].copy(),
            self._held,
            self._held_at,
        )

    @classmethod
    def restore(cls, params: UsageParams, history: UsageHistory) -> "UsageStore":
        """A store with ``history`` in it, re-bucketed when its bucket size differs from what ``params`` give."""
        store = cls(params)
        store._columns = {queue: i + 1 for i, queue in enumerate(history.queues)}
        store._amounts = np.zeros((store.slots, len(history.queues) + 1, 3))
        for i in range(len(history.ids)):
            store._spread(history.amounts[i], float(history.first[i]), float(history.last[i]))
        if history.held is not None and history.held_at is not None:
            store.record(history.held_at, history.held)
        return store

    def _vector(self, sample: AllocationSample) -> Floats:
        vector = np.zeros((len(self._columns) + 1, 3))
        vector[0] = sample.capacity
        for queue, amounts in sample.queues.items():
            vector[self._columns[queue]] = amounts
        return vector

    def _charge_to(self, now: float) -> None:
        if self._held_at is None or self._held_vector is None or now <= self._held_at:
            return
        start = max(self._held_at, now - self.params.staleness_s)
        vector = self._held_vector
        self._held_at = now
        for bucket in range(math.floor(start / self.bucket_s), math.ceil(now / self.bucket_s)):
            low, high = max(start, bucket * self.bucket_s), min(now, (bucket + 1) * self.bucket_s)
            if high > low:
                self._add(bucket, vector * (high - low), low, high)

    def _spread(self, amounts: Floats, first: float, last: float) -> None:
        """Add a restored bucket's amounts to the buckets its charged time falls in, in proportion to the overlap."""
        if last <= first:
            return
        for bucket in range(math.floor(first / self.bucket_s), math.ceil(last / self.bucket_s)):
            low, high = max(first, bucket * self.bucket_s), min(last, (bucket + 1) * self.bucket_s)
            if high > low:
                self._add(bucket, amounts * ((high - low) / (last - first)), low, high)

    def _add(self, bucket: int, amounts: Floats, low: float, high: float) -> None:
        slot = bucket % self.slots
        if self._ids[slot] > bucket:
            return  # older than everything the ring still holds
        if self._ids[slot] != bucket:
            self._ids[slot] = bucket
            self._first[slot], self._last[slot] = low, high
            self._amounts[slot] = 0.0
        self._first[slot] = min(self._first[slot], low)
        self._last[slot] = max(self._last[slot], high)
        self._amounts[slot, : len(amounts)] += amounts
