"""May a queue reclaim, and is a reclaim scenario fair (KAI's proportion/reclaimable and its strategies)?

Victims are taken from the sibling ancestors where the reclaimer's and the victim's queue paths part. Each chunk of
victim resources must be allowed by one strategy — the victim side stays above its allocatable share (maintain fair
share), or the reclaimer stays within deserved while the victim is above it (guarantee deserved quota). Afterwards
the reclaimer's side must not become more saturated than the siblings it took from.
"""

import math
from collections.abc import Mapping

from kai.core.plugins.proportion.attributes import Quantities, QueueAttributes, ancestry, less_equal
from kai.core.plugins.proportion.resource_division import UNLIMITED

Chunk = Quantities


def _add(a: Quantities | list[float], b: Quantities | list[float]) -> list[float]:
    return [x + y for x, y in zip(a, b, strict=True)]


def _leveled(
    queues: Mapping[str, QueueAttributes], reclaimer: str, reclaimee: str
) -> tuple[QueueAttributes, QueueAttributes]:
    left, right = ancestry(queues, reclaimer)[::-1], ancestry(queues, reclaimee)[::-1]
    pair = (left[0], right[0])
    for a, b in zip(left, right, strict=False):
        pair = (a, b)
        if a.uid != b.uid:
            break
    return pair


def can_reclaim(queue: QueueAttributes, request: Quantities, preemptible: bool) -> bool:
    """The reclaimer's queue stays within fair share (and, if non-preemptible, within deserved)."""
    if not less_equal(_add(queue.allocated, request), queue.fair_share()):
        return False
    return preemptible or less_equal(_add(queue.allocated_non_preemptible, request), queue.deserved())


def may_reclaim_from(
    queues: Mapping[str, QueueAttributes], reclaimer_queue: str, request: Quantities, victim_queue: str
) -> bool:
    """Whether some strategy could let a job of ``reclaimer_queue`` asking for ``request`` take resources of
    ``victim_queue`` (KAI's FilterVictim, a reclaim victim filter): compared where their paths part, either the
    reclaimer's side would leave its deserved quota and the victim's side is above its allocatable share, or the
    reclaimer's side stays within deserved and the victim's side is above deserved in a resource the reclaimer asks
    for (and below it in none)."""
    if reclaimer_queue not in queues or victim_queue not in queues:
        return True
    reclaimer, reclaimee = _leveled(queues, reclaimer_queue, victim_queue)
    if not less_equal(_add(reclaimer.allocated, request), reclaimer.deserved()):
        return not less_equal(reclaimee.allocated, reclaimee.allocatable_share())
    under = False
    for amount, allocated, deserved in zip(request, reclaimee.allocated, reclaimee.deserved(), strict=True):
        if amount <= 0 or deserved == UNLIMITED:
            continue
        if allocated > deserved:
            return True
        under = under or allocated < deserved
    return not under


def refuses_every_eviction(queues: Mapping[str, QueueAttributes], reclaimer_queue: str, victim_queue: str) -> bool:
    """``reclaimable`` refuses every scenario that evicts anything from ``victim_queue``, whatever the reclaimer asks
    for: the first chunk taken from the victim's side (where the two paths part) meets the side's whole allocation,
    and a side within both its allocatable share and its deserved quota fits neither strategy; later chunks meet
    less. Not proven for a side on the reclaimer's own path (there other victims' chunks could come first)."""
    if reclaimer_queue not in queues or victim_queue not in queues:
        return False
    _, side = _leveled(queues, reclaimer_queue, victim_queue)
    if any(queue.uid == side.uid for queue in ancestry(queues, reclaimer_queue)):
        return False
    return less_equal(side.allocated, side.allocatable_share()) and less_equal(side.allocated, side.deserved())


def _fits_strategy(
    request: Quantities, reclaimer: QueueAttributes, reclaimee: QueueAttributes, remaining: list[float]
) -> bool:
    if not less_equal(remaining, reclaimee.allocatable_share()):
        return True
    if not less_equal(_add(reclaimer.allocated, request), reclaimer.deserved()):
        return False
    return not less_equal(remaining, reclaimee.deserved())


def _involved(chunks: list[Chunk]) -> set[int]:
    return {i for chunk in chunks for i in range(3) if chunk[i] > 0}


def _saturation(allocated: float, fair: float) -> float:
    if fair == 0:
        return math.inf if allocated > 0 else 0.0
    if fair == UNLIMITED:
        return 0.0
    return allocated / fair


def reclaimable(
    queues: Mapping[str, QueueAttributes],
    reclaimer_queue: str,
    request: Quantities,
    preemptible: bool,
    victims_by_queue: Mapping[str, list[Chunk]],
    multiplier: float,
) -> bool:
    remaining: dict[str, list[float]] = {}
    involved: dict[str, set[int]] = {}
    for victim_queue, chunks in victims_by_queue.items():
        reclaimer_side, reclaimee_side = _leveled(queues, reclaimer_queue, victim_queue)
        involved[victim_queue] = _involved(chunks)
        side_remaining = remaining.setdefault(reclaimee_side.uid, list(queues[reclaimee_side.uid].allocated))
        for chunk in chunks:
            if not _fits_strategy(request, reclaimer_side, reclaimee_side, side_remaining):
                return False
            for ancestor in ancestry(queues, victim_queue):
                left = remaining.setdefault(ancestor.uid, list(ancestor.allocated))
                for i in range(3):
                    left[i] -= chunk[i]
                involved.setdefault(ancestor.uid, set()).update(involved[victim_queue])
    requester_involved = {i for i in range(3) if request[i] > 0}
    for queue in ancestry(queues, reclaimer_queue):
        mine = _add(remaining.get(queue.uid, queue.allocated), request)
        for sibling_uid, sibling_left in remaining.items():
            sibling = queues[sibling_uid]
            if sibling.parent != queue.parent or sibling.uid == queue.uid:
                continue
            resources = involved.get(sibling_uid, set()) | requester_involved
            for i in resources:
                mine_fair, sibling_fair = queue.fair_share()[i], sibling.fair_share()[i]
                if mine_fair == UNLIMITED and sibling_fair == UNLIMITED:
                    continue
                mine_ratio = _saturation(mine[i], mine_fair)
                sibling_ratio = _saturation(sibling_left[i], sibling_fair)
                if mine_ratio > 1 and sibling_fair > 0 and mine_ratio * multiplier >= sibling_ratio:
                    return False
        if not preemptible and not less_equal(_add(queue.allocated_non_preemptible, request), queue.deserved()):
            return False
    return True
