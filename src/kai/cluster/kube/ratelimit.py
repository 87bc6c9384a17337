"""Client-side limits on API requests: a rate per component (KAI's ``--qps`` and ``--burst``), served in order of
purpose, and a window of requests in flight per process that follows the API server's own feedback.

**Rate** (``TokenBucket``, one per component: a ``Lane``): a component may send ``burst`` requests at once, then
``qps`` a second; every request (each try of a retried one, each watch when it opens, each LIST page) takes a token.
When the bucket is empty, requests wait in order of their ``Purpose`` — BindRequests and bindings first, then every
other request, then reports (``port.reporting()``), events last — and in arrival order within one purpose, so a
component's events and status writes never hold up the binds behind them.

**Window** (``Window``, one per process): at most ``size`` requests in flight (watches are long-running, as the API
server counts them, and take no place), the size moved as TCP moves its window: halved when the server answers 429
(its ``--max-requests-inflight``, or priority and fairness rejecting a request) or 503 with a Retry-After, at most once
per ``CUT_EVERY_S``; grown by one per window of successes up to ``MAX_WINDOW``. The refused request itself is tried
again after the ``Retry-After`` the server asked for (``transport``); the others are not held for it (the classic
in-flight filter always asks for a second: holding every request a second per refusal bound a drill at 4 in flight to
half a pod a second). On a healthy server the window stays wide open and the rates decide; on an overloaded one the
window shrinks until the server stops refusing, whatever the rates allow. Reports and events take at most one place
in ``BACKGROUND_SHARE`` of the window, whoever else waits: the API server's time goes to the requests a pod's binding
waits for, and theirs follows (in a burst of 1,000 pods on 2 cores, 20-30% more pods a second).

Both live on the client's event loop (one thread), so they need no lock. The time each request waited for its token
is kept per verb (``rest_client_rate_limiter_duration_seconds``) and per purpose.
"""

import asyncio
import heapq
import itertools
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import IntEnum

WAIT_BUCKETS_S = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
"""client-go's buckets for ``rest_client_rate_limiter_duration_seconds``."""
MAX_WINDOW = 64
"""Requests in flight per process at most (and at first): far above what a healthy server needs from kai (each
component's threads send one request at a time), far below what a server's default ``--max-requests-inflight``
(400) accepts."""
EPSILON = 1e-9
"""A token's share below which the bucket counts as full enough (a sleep of (1 - tokens) / qps may end a rounding
error short of a whole token)."""
BACKGROUND_SHARE = 8
"""Reports and events in flight take at most one place in this many of the window (8 of 64): in a burst the API
server's time goes to the path from a pod to its binding, and they follow as places free up. Enough for a steady
stream (8 in flight at 50 ms is 160 a second); in a burst they wait and catch up after it."""
CUT_EVERY_S = 0.5
"""Refusals within this long of a cut count as the same signal: the window is halved once for them."""


class Purpose(IntEnum):
    """Why a request is sent, in the order waiting requests are served."""

    BIND = 0
    """BindRequests and pod bindings: the path from a decision to a running pod."""
    WRITE = 1
    """Every other request: reads, PodGroups, annotations, the scheduler's conditions."""
    REPORT = 2
    """Reports (``port.reporting()``): statuses and conditions no decision waits for."""
    EVENT = 3
    """Events: best effort."""


BACKGROUND = frozenset({Purpose.REPORT, Purpose.EVENT})
"""The purposes that take at most ``BACKGROUND_SHARE`` of the window."""


def purpose_of(path: str, report: bool = False) -> Purpose:
    """The purpose of a request to ``path``; ``report``: made inside ``port.reporting()``."""
    if path.startswith("/api/v1/") and "/events" in path:
        return Purpose.EVENT
    if report:
        return Purpose.REPORT
    if "/bindrequests" in path or path.endswith("/binding"):
        return Purpose.BIND
    return Purpose.WRITE


@dataclass
class Waits:
    """How long requests of one verb (or purpose) waited for a token: a histogram over ``WAIT_BUCKETS_S``."""

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

    def merge(self, other: "Waits") -> None:
        """Adds ``other``'s requests to these."""
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]
        self.total += other.total
        self.sum_s += other.sum_s


@dataclass(frozen=True)
class RateLimit:
    """KAI's ``--qps`` and ``--burst``; qps <= 0 means no limit."""

    qps: float = 0.0
    burst: int = 0


UNLIMITED = RateLimit()


class TokenBucket:
    """At most ``burst`` requests at once and ``qps`` a second on average, waiting requests served by purpose;
    ``qps`` <= 0 means no limit."""

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
        self._waiting: list[tuple[Purpose, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._pump: asyncio.Future[None] | None = None
        self.waits: dict[str, Waits] = {}
        """Per verb (HTTP method), how long its requests waited."""
        self.purpose_waits: dict[Purpose, Waits] = {}
        """Per purpose, how long its requests waited."""

    @property
    def limited(self) -> bool:
        return self.qps > 0

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.qps)
        self._at = now

    async def take(self, verb: str, purpose: Purpose = Purpose.WRITE) -> None:
        """Take a token for one request, waiting (behind the requests of earlier purposes) until it has one."""
        waited = 0.0
        if self.limited:
            self._refill()
            if not self._waiting and self._tokens >= 1 - EPSILON:
                self._tokens -= 1.0
            else:
                started = self._clock()
                turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                heapq.heappush(self._waiting, (purpose, next(self._order), turn))
                if self._pump is None or self._pump.done():
                    self._pump = asyncio.ensure_future(self._hand_out())
                await turn  # the pump took our token
                waited = self._clock() - started
        self.waits.setdefault(verb, Waits()).add(waited)
        self.purpose_waits.setdefault(purpose, Waits()).add(waited)

    async def _hand_out(self) -> None:
        """Gives each token as it comes to the first waiting request (a cancelled one takes none)."""
        while self._waiting:
            self._refill()
            if self._tokens >= 1 - EPSILON:
                _, _, turn = heapq.heappop(self._waiting)
                if not turn.done():
                    self._tokens -= 1.0
                    turn.set_result(None)
                continue
            await self._sleep((1.0 - self._tokens) / self.qps)


class Window:
    """Requests in flight to one API server, at most ``size``: see the module docstring."""

    def __init__(self, size: int = MAX_WINDOW, clock: Callable[[], float] = time.monotonic) -> None:
        self.ceiling = size
        self.size = float(size)
        self.in_flight = 0
        self.refusals = 0
        """Answers that cut the window (429, or 503 with a Retry-After), counted."""
        self._clock = clock
        self._cut_at = -CUT_EVERY_S
        self._waiting: list[tuple[Purpose, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self.background = 0
        """Reports and events in flight."""

    def _room(self, purpose: Purpose) -> bool:
        """Whether a request of ``purpose`` may go now."""
        size = max(1, int(self.size))
        if self.in_flight >= size:
            return False
        return purpose not in BACKGROUND or self.background < max(1, size // BACKGROUND_SHARE)

    def _count_in(self, purpose: Purpose) -> None:
        self.in_flight += 1
        self.background += purpose in BACKGROUND

    async def enter(self, purpose: Purpose = Purpose.WRITE) -> None:
        """Waits for a place in the window (requests of earlier purposes first; reports and events within their
        share)."""
        if not self._waiting and self._room(purpose):
            self._count_in(purpose)
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (purpose, next(self._order), turn))
        self._admit()
        await turn

    def leave(self, purpose: Purpose = Purpose.WRITE, refused: bool = False) -> None:
        """The answer to a request of ``purpose`` came: ``refused`` when the server pushed back."""
        self.in_flight -= 1
        self.background -= purpose in BACKGROUND
        now = self._clock()
        if refused:
            self.refusals += 1
            if now - self._cut_at >= CUT_EVERY_S:
                self.size = max(1.0, self.size / 2)
                self._cut_at = now
        elif self.size < self.ceiling:
            self.size = min(float(self.ceiling), self.size + 1.0 / self.size)
        self._admit()

    def _admit(self) -> None:
        """Lets waiting requests in while there is room (the first in order waits for a place of its kind: behind
        it are only requests of the same or a later purpose)."""
        while self._waiting and self._room(self._waiting[0][0]):
            purpose, _, turn = heapq.heappop(self._waiting)
            if not turn.done():
                self._count_in(purpose)
                turn.set_result(None)


@dataclass
class Lane:
    """One component's share of a process's connection: its rate limit and what it sent."""

    name: str
    bucket: TokenBucket
    requests: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    """Requests sent, by (method, resource, HTTP status code or "<error>"); ``resource`` is the plural with its
    subresource (``pods/binding``, ``bindrequests/status``)."""
    seconds: float = 0.0
    """The time its requests took, from sent to answered (the server's time and the client's event loop's)."""
    answered: int = 0

    def took(self, seconds: float) -> None:
        self.seconds += seconds
        self.answered += 1


def resource_of(path: str) -> str:
    """The resource a request path names: ``pods``, ``pods/status``, ``bindrequests``, ``leases``…"""
    parts = [part for part in path.split("?", 1)[0].split("/") if part]
    # /api/v1/... or /apis/<group>/<version>/...
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    if not rest:
        return "<discovery>"
    return f"{rest[0]}/{rest[2]}" if len(rest) >= 3 else rest[0]
