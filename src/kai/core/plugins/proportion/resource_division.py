"""Hierarchical fair-share division of the proportion plugin (KAI `resource_division`).

Each sibling set splits its parent's share (the cluster total at the top level) for every resource
independently:

1. Deserved pass: every queue gets min(deserved, requestable); deserved −1 means "the whole total".
2. Over-quota pass, if anything is left, priority levels from highest to lowest.  Within a level, rounds split
   the amount left at the round start by normalized over-quota weight (adjusted by historical usage and
   `k_value`).  A queue that needs no more than its candidate gets exactly what it needs; otherwise it gets
   the candidate rounded down to a whole number and the fraction is remembered.  Rounds repeat while some
   queue needed less than its candidate.
3. Leftover pass, priority levels from highest to lowest: queues with a remembered fraction, largest
   fraction first (then older, then smaller UID), get min(1, left) each until nothing is left.

All arithmetic is float64 in the same operation order as KAI, so results match bit for bit.  KAI visits
siblings in Go map order (random); here they are visited in the order given, which is one of the orders KAI
may use; the order only affects the float rounding of the running remainder.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

UNLIMITED = -1.0
"""KAI's marker for "no quota" / "no limit" (`UnlimitedResourceQuantity`)."""


class Resource(StrEnum):
    """The three resources fair share is computed for, each divided independently."""

    GPU = "gpu"
    CPU = "cpu"
    MEMORY = "memory"


T = TypeVar("T")


def _of(resource: Resource, gpu: T, cpu: T, memory: T) -> T:
    """The one of ``gpu``, ``cpu`` and ``memory`` that is of ``resource``."""
    match resource:
        case Resource.GPU:
            return gpu
        case Resource.CPU:
            return cpu
        case Resource.MEMORY:
            return memory


@dataclass(slots=True)
class ResourceShare:
    """One queue's quota, demand and fair share of one resource (GPU devices, millicores or bytes)."""

    deserved: float
    max_allowed: float
    over_quota_weight: float
    request: float
    usage: float = 0.0
    fair_share: float = 0.0


@dataclass(slots=True)
class QueueShares:
    """One queue among its siblings; `creation_ts` (seconds) and `uid` break ties in the leftover pass."""

    uid: str
    name: str
    creation_ts: float
    priority: int
    gpu: ResourceShare
    cpu: ResourceShare
    memory: ResourceShare

    def share(self, resource: Resource) -> ResourceShare:
        """The share of `resource`, so the division code can be written once for all three resources."""
        return _of(resource, self.gpu, self.cpu, self.memory)


@dataclass(frozen=True, slots=True)
class ResourceTotals:
    """Amount of each resource a sibling set divides: the cluster total, or the parent's fair share."""

    gpu: float
    cpu: float
    memory: float

    def of(self, resource: Resource) -> float:
        """The amount of `resource`."""
        return _of(resource, self.gpu, self.cpu, self.memory)


def requestable(share: ResourceShare) -> float:
    """What the queue could use: its request, capped by max_allowed unless that is unlimited."""
    if share.max_allowed == UNLIMITED:
        return share.request
    return min(share.max_allowed, share.request)


def divide_among_siblings(total: ResourceTotals, siblings: Sequence[QueueShares], k_value: float) -> None:
    """Set every sibling's fair_share for all three resources from the parent's share `total`."""
    for resource in Resource:
        divide_resource(total.of(resource), siblings, resource, k_value)


def divide_tree(
    total: ResourceTotals,
    top_level: Sequence[QueueShares],
    children: Mapping[str, Sequence[QueueShares]],
    k_value: float,
) -> None:
    """Divide the cluster `total` over a whole queue tree; `children` maps a parent UID to its children.

    Each queue's children split the queue's full fair share (deserved plus over-quota), not its deserved
    quota nor its limit.  Children are not capped by that amount: their deserved pass gives min(deserved,
    requestable) even when the deserved quotas add up to more than the parent received, so a child's fair
    share can exceed its parent's (KAI's "oversubscription" case).
    """
    if not top_level:
        return
    divide_among_siblings(total, top_level, k_value)
    for queue in top_level:
        parent_share = ResourceTotals(
            gpu=queue.gpu.fair_share, cpu=queue.cpu.fair_share, memory=queue.memory.fair_share
        )
        divide_tree(parent_share, children.get(queue.uid, ()), children, k_value)


def divide_resource(total: float, siblings: Sequence[QueueShares], resource: Resource, k_value: float) -> float:
    """Set the siblings' fair_share of one resource from scratch; returns the amount nobody could take.

    Fair shares are reset first so a session can recompute them on the same objects (KAI builds fresh
    attributes every session).  When the deserved quotas exceed `total`, the over-quota pass is skipped
    and nothing is reported left.
    """
    for queue in siblings:
        queue.share(resource).fair_share = 0.0
    left = _give_deserved(total, siblings, resource)
    if left > 0:
        return divide_over_quota(left, siblings, resource, k_value)
    return 0.0


def divide_over_quota(amount: float, siblings: Sequence[QueueShares], resource: Resource, k_value: float) -> float:
    """Add the over-quota split of `amount` to the siblings' current fair_share; returns what stays undivided.

    Higher priority levels divide first and lower levels get what they leave; the fractions rounded away in
    every level are only handed out afterwards, so a lower level can take resources a higher level's
    rounding left behind.
    """
    levels = _levels_by_priority(siblings)
    fractions: list[dict[str, _Fraction]] = []
    for level in levels:
        amount, level_fractions = _divide_level(amount, level, resource, k_value)
        fractions.append(level_fractions)
    for level_fractions in fractions:
        if amount <= 0:
            break
        amount = _give_leftovers(amount, level_fractions, resource)
    return amount


@dataclass(slots=True)
class _Fraction:
    """A candidate's fractional part a queue did not get because whole units were handed out."""

    queue: QueueShares
    amount: float


def _give_deserved(total: float, siblings: Sequence[QueueShares], resource: Resource) -> float:
    """Give each sibling its deserved quota (or the whole total when unlimited), capped by what it can use."""
    left = total
    for queue in siblings:
        share = queue.share(resource)
        deserved = total if share.deserved == UNLIMITED else share.deserved
        amount = min(deserved, requestable(share))
        share.fair_share += amount
        left -= amount
    return left


def _levels_by_priority(siblings: Sequence[QueueShares]) -> list[list[QueueShares]]:
    """Siblings grouped by priority, highest priority first, keeping the given order inside a level."""
    levels: dict[int, list[QueueShares]] = {}
    for queue in siblings:
        levels.setdefault(queue.priority, []).append(queue)
    return [levels[priority] for priority in sorted(levels, reverse=True)]


def _wants_more(share: ResourceShare) -> bool:
    """True while the queue's fair share is below both its request and its limit."""
    if share.request <= share.fair_share:
        return False
    return share.max_allowed == UNLIMITED or share.max_allowed > share.fair_share


def _outstanding(share: ResourceShare) -> float:
    """How much more the queue could use on top of its current fair share (never negative)."""
    wanted = requestable(share)
    if wanted < share.fair_share:
        return 0.0
    return wanted - share.fair_share


def _share_weights(level: Sequence[QueueShares], resource: Resource, k_value: float) -> tuple[dict[str, float], float]:
    """Usage-adjusted weights of the queues still wanting more, max(0, w + k·(w − usage)) with w normalized,
    and their sum.

    With k_value 0 or no usage the weights are proportional to the over-quota weights; heavy past users are
    pushed down, possibly to 0.  The sum is accumulated left to right (not with `sum()`, which compensates
    rounding from Python 3.12 on) to keep Go's float results.
    """
    total_weight = 0.0
    for queue in level:
        share = queue.share(resource)
        if _outstanding(share) > 0:
            total_weight += share.over_quota_weight
    weights: dict[str, float] = {}
    weights_sum = 0.0
    if total_weight == 0:
        return weights, weights_sum
    for queue in level:
        share = queue.share(resource)
        if not _wants_more(share):
            continue
        weight = share.over_quota_weight / total_weight
        weights[queue.uid] = max(0.0, weight + k_value * (weight - share.usage))
        weights_sum += weights[queue.uid]
    return weights, weights_sum


def _divide_level(
    amount: float, level: Sequence[QueueShares], resource: Resource, k_value: float
) -> tuple[float, dict[str, _Fraction]]:
    """Over-quota rounds for one priority level; returns what is left and the remembered fractions."""
    fractions: dict[str, _Fraction] = {}
    while True:
        another_round = False
        round_amount = amount
        weights, weights_sum = _share_weights(level, resource, k_value)
        if weights_sum == 0:
            break
        for queue in level:
            if amount == 0:
                break
            share = queue.share(resource)
            if not _wants_more(share) or share.over_quota_weight == 0:
                continue
            outstanding = _outstanding(share)
            candidate = round_amount * (weights[queue.uid] / weights_sum)
            given = _take_from_candidate(candidate, outstanding, queue, fractions)
            if given == 0:
                continue
            share.fair_share += given
            amount -= given
            another_round = another_round or outstanding < candidate
        if not another_round or amount == 0:
            break
    return amount, fractions


def _take_from_candidate(
    candidate: float, outstanding: float, queue: QueueShares, fractions: dict[str, _Fraction]
) -> float:
    """What a queue takes of its candidate share; records (or clears) its fraction for the leftover pass.

    A queue its candidate cannot satisfy gets whole units only, so over-quota shares stay round numbers; when
    that candidate is itself whole, a fraction recorded in an earlier round is kept (as KAI does).
    """
    if outstanding <= candidate:
        fractions.pop(queue.uid, None)
        return outstanding
    whole = float(math.floor(candidate))
    given = whole if whole > 0 else 0.0
    if candidate - given > 0:
        fractions[queue.uid] = _Fraction(queue, candidate - given)
    return given


def _give_leftovers(amount: float, fractions: Mapping[str, _Fraction], resource: Resource) -> float:
    """Hand out min(1, left) per remembered fraction, largest fraction first, then older queue, then UID.

    The receiver's demand and limit are not re-checked, so a queue may end above its requestable amount.
    """
    order = sorted(fractions.values(), key=lambda f: (-f.amount, f.queue.creation_ts, f.queue.uid))
    for fraction in order:
        if amount == 0:
            break
        given = min(1.0, amount)
        fraction.queue.share(resource).fair_share += given
        amount -= given
    return amount
