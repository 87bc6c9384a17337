"""Client-side rate limits on API requests: client-go's token bucket, set by KAI's ``--qps`` and ``--burst``.

A process may send ``burst`` requests at once, then ``qps`` a second: the bucket holds ``burst`` tokens, refills at
``qps`` a second, and every request (each try of a retried one, each watch when it opens, each LIST page) takes one,
waiting for it when the bucket is empty. Waits are reservations, as client-go's are: a request that finds the bucket
empty takes a token it will have and sleeps until then, so waiters leave in arrival order and the rate holds however
many wait. The time each request waited is kept per verb for ``rest_client_rate_limiter_duration_seconds``.

The bucket lives on the client's event loop (one thread), so it needs no lock.
"""

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

WAIT_BUCKETS_S = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
"""client-go's buckets for ``rest_client_rate_limiter_duration_seconds``."""


@dataclass
class Waits:
    """How long requests of one verb waited for a token: a histogram over ``WAIT_BUCKETS_S``."""

    counts: list[int] = field(default_factory=lambda: [0] * len(WAIT_BUCKETS_S))
    """Requests that waited at most each bucket's bound (not cumulative; the collector sums them)."""
    total: int = 0
    sum_s: float = 0.0

    def add(self, seconds: float) -> None:
        self.total += 1
        self.sum_s += seconds
        for i, bound in enumerate(WAIT_BUCKETS_S):
            if seconds <= bound:
                self.counts[i] += 1
                return


@dataclass(frozen=True)
class RateLimit:
    """KAI's ``--qps`` and ``--burst``; qps <= 0 means no limit."""

    qps: float = 0.0
    burst: int = 0


UNLIMITED = RateLimit()


class TokenBucket:
    """At most ``burst`` requests at once and ``qps`` a second on average; ``qps`` <= 0 means no limit."""

    def __init__(
        self,
        qps: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if qps > 0 and burst < 1:
            raise ValueError(f"burst must be at least 1 when qps is set (qps {qps:g}, burst {burst})")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._at = clock()
        self.waits: dict[str, Waits] = {}
        """Per verb (HTTP method), how long its requests waited."""

    @property
    def limited(self) -> bool:
        return self.qps > 0

    async def take(self, verb: str) -> None:
        """Take a token for one request, waiting until the bucket has it."""
        waited = 0.0
        if self.limited:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.qps)
            self._at = now
            self._tokens -= 1.0
            if self._tokens < 0:
                waited = -self._tokens / self.qps
                await self._sleep(waited)
        self.waits.setdefault(verb, Waits()).add(waited)
