"""Queue order of the proportion plugin (KAI's queue_order.go): which sibling queue gets the next job.

Each rule returns -1 (left first), 1 (right first) or 0 (undecided); the first decisive rule wins. Every rule but the
last two reads one side at a time: what it reads of a queue with its next job's request (its ``Standing``) is worked
out once per allocation of the queue and request, since a heap compares the same few queues over and over while
nothing is allocated (a victim simulation pops every pending job ahead of the ones it re-places).
"""

from collections.abc import Callable
from typing import NamedTuple

from kai.core.plugins.proportion.attributes import Quantities, QueueAttributes, less_equal, strictly_less

Request = tuple[float, float, float]


class Standing(NamedTuple):
    """What the one-sided rules read of a queue asking for ``request`` at its current allocation."""

    over_fair_share: bool
    within_deserved_with_job: bool
    violates_zero_share: bool
    dominant_share_with_job: float
    dominant_share: float


def standing(queue: QueueAttributes, request: Request, total: Quantities) -> Standing:
    with_job = _with(queue.allocated, request)
    return Standing(
        strictly_less(queue.fair_share(), queue.allocated),
        less_equal(with_job, queue.deserved()),
        any(share == 0 and amount > 0 for share, amount in zip(queue.allocatable_share(), with_job, strict=True)),
        queue.dominant_share(total, with_job),
        queue.dominant_share(total),
    )


class Standings:
    """``standing`` remembered by queue, allocation and request (a pure function of them; the session's totals
    and shares are fixed). Allocations come back to the same values when a simulation is undone, so entries stay
    good across simulations; the memory is bounded by starting afresh when full."""

    LIMIT = 1 << 16

    def __init__(self, total: Quantities) -> None:
        self.total = total
        self.known: dict[tuple[str, float, float, float, Request], Standing] = {}

    def of(self, queue: QueueAttributes, request: Request) -> Standing:
        allocated = queue.allocated
        key = (queue.uid, allocated[0], allocated[1], allocated[2], request)
        found = self.known.get(key)
        if found is None:
            if len(self.known) >= self.LIMIT:
                self.known.clear()
            found = self.known[key] = standing(queue, request, self.total)
        return found


def _with(allocated: list[float], request: Request) -> list[float]:
    return [allocated[0] + request[0], allocated[1] + request[1], allocated[2] + request[2]]


def _compare(left: float, right: float) -> int:
    return -1 if left < right else (1 if left > right else 0)


def _allocatable_share(left: QueueAttributes, right: QueueAttributes) -> int:
    lshare, rshare = left.allocatable_share(), right.allocatable_share()
    if not less_equal(rshare, lshare) and less_equal(lshare, rshare):
        return -1
    if not less_equal(lshare, rshare) and less_equal(rshare, lshare):
        return 1
    return 0


def queue_order(
    left: QueueAttributes,
    right: QueueAttributes,
    left_request: Request,
    right_request: Request,
    left_victims: Callable[[], list[Request]],
    right_victims: Callable[[], list[Request]],
    standings: Standings,
) -> int:
    """KAI's queue comparison; requests are the next jobs' needs, victims the allocations already chosen (asked
    for only when the dominant-resource rule is reached: summing them is most of the cost of a victim queue)."""
    known, lalloc, ralloc = standings.known, left.allocated, right.allocated  # ``Standings.of``, its lookup inline
    lstand = known.get((left.uid, lalloc[0], lalloc[1], lalloc[2], left_request)) or standings.of(left, left_request)
    rstand = known.get((right.uid, ralloc[0], ralloc[1], ralloc[2], right_request)) or standings.of(
        right, right_request
    )
    if lstand.over_fair_share != rstand.over_fair_share:  # the under-utilized queue first
        return 1 if lstand.over_fair_share else -1
    if lstand.within_deserved_with_job != rstand.within_deserved_with_job:  # the one still within quota with its job
        return -1 if lstand.within_deserved_with_job else 1
    if left.priority != right.priority:
        return -1 if left.priority > right.priority else 1
    if lstand.violates_zero_share != rstand.violates_zero_share:
        return 1 if lstand.violates_zero_share else -1
    total = standings.total
    rule = _compare(
        _dominant_with(left, lstand, left_request, left_victims(), total),
        _dominant_with(right, rstand, right_request, right_victims(), total),
    ) or _compare(lstand.dominant_share, rstand.dominant_share)
    if rule:
        return rule
    rule = _allocatable_share(left, right)
    if rule:
        return rule
    return -1 if left.creation_ts < right.creation_ts else 1


def _dominant_with(
    queue: QueueAttributes, stand: Standing, request: Request, victims: list[Request], total: Quantities
) -> float:
    """DRF share with the job and without the victims already taken (with none, the standing's)."""
    if not victims:
        return stand.dominant_share_with_job
    allocated = _with(queue.allocated, request)
    for victim in victims:
        allocated = [a - v for a, v in zip(allocated, victim, strict=True)]
    return queue.dominant_share(total, allocated)
