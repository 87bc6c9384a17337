"""A leaf queue's jobs as one sorted run instead of a heap.

Job order keys are a strict total order (they end in the job's key), so a heap pops its jobs in key order whatever
its shape: a sorted list read from a cursor pops the same jobs, is built by one sort in C instead of a push per job,
and is copied by sharing the list (it is copied on the first insert into a shared run). Popping the best is moving a
cursor: from the front in job order, from the back in victim order (worst first).
"""

from bisect import bisect_left
from typing import Any

from kai.core.state.podgroup_info import PodGroupInfo

Key = tuple[Any, ...]


class SortedJobs:
    __slots__ = ("hi", "jobs", "keys", "lo", "owned", "swap", "worst_first")

    def __init__(self, keys: list[Key], jobs: list[PodGroupInfo], worst_first: bool, owned: bool = True) -> None:
        """``keys`` ascending, ``jobs`` in step; the run keeps the lists (``owned``: it may change them in place)."""
        self.keys = keys
        self.jobs = jobs
        self.lo = 0
        self.hi = len(jobs)
        self.worst_first = worst_first
        self.owned = owned
        self.swap: tuple[int, PodGroupInfo] | None = None
        """A job standing in for the one at a place of shared lists (``replace`` without a copy)."""

    def __len__(self) -> int:
        return self.hi - self.lo

    def _at(self, at: int) -> PodGroupInfo:
        swap = self.swap
        return swap[1] if swap is not None and swap[0] == at else self.jobs[at]

    def peek(self) -> PodGroupInfo:
        return self._at(self.hi - 1 if self.worst_first else self.lo)

    def pop(self) -> PodGroupInfo:
        if self.worst_first:
            self.hi -= 1
            return self._at(self.hi)
        self.lo += 1
        return self._at(self.lo - 1)

    def insert(self, key: Key, job: PodGroupInfo) -> None:
        self._own()
        at = bisect_left(self.keys, key, self.lo, self.hi)
        self.keys.insert(at, key)
        self.jobs.insert(at, job)
        self.hi += 1

    def remove(self, key: Key) -> None:
        self._own()
        at = bisect_left(self.keys, key, self.lo, self.hi)
        assert self.keys[at] == key
        del self.keys[at], self.jobs[at]
        self.hi -= 1

    def replace(self, key: Key, job: PodGroupInfo) -> None:
        """Puts ``job`` in the place of the job with ``key`` (the same order key); in shared lists, over them."""
        at = bisect_left(self.keys, key, self.lo, self.hi)
        assert self.keys[at] == key and self.swap is None
        if self.owned:
            self.jobs[at] = job
        else:
            self.swap = (at, job)

    def _own(self) -> None:
        if not self.owned:
            self.keys, self.jobs = self.keys[self.lo : self.hi], self.jobs[self.lo : self.hi]
            if self.swap is not None and self.lo <= self.swap[0] < self.hi:
                self.jobs[self.swap[0] - self.lo] = self.swap[1]
            self.lo, self.hi, self.owned, self.swap = 0, len(self.jobs), True, None

    def holds(self, key: Key) -> bool:
        at = bisect_left(self.keys, key, self.lo, self.hi)
        return at < self.hi and self.keys[at] == key

    def take(self, key: Key) -> PodGroupInfo | None:
        """Pops up to and including the job with ``key`` (None, and nothing popped, if it is not here)."""
        at = bisect_left(self.keys, key, self.lo, self.hi)
        if at == self.hi or self.keys[at] != key:
            return None
        if self.worst_first:
            self.hi = at
        else:
            self.lo = at + 1
        return self._at(at)

    def shared(self) -> "SortedJobs":
        """A run to pop on its own; both copy the lists before they next insert."""
        self.owned = False
        twin = SortedJobs(self.keys, self.jobs, self.worst_first, owned=False)
        twin.lo, twin.hi, twin.swap = self.lo, self.hi, self.swap
        return twin
