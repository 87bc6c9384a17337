"""Queue order of the proportion plugin (KAI's queue_order.go): which sibling queue gets the next job.

Each rule returns -1 (left first), 1 (right first) or 0 (undecided); the first decisive rule wins.
"""

from collections.abc import Callable

from kai.core.plugins.proportion.attributes import Quantities, QueueAttributes, less_equal, strictly_less

Request = tuple[float, float, float]


def _under_utilized(left: QueueAttributes, right: QueueAttributes) -> int:
    left_over = strictly_less(left.fair_share(), left.allocated)
    right_over = strictly_less(right.fair_share(), right.allocated)
    if left_over != right_over:
        return 1 if left_over else -1
    return 0


def _with(allocated: list[float], request: Request) -> list[float]:
    return [allocated[0] + request[0], allocated[1] + request[1], allocated[2] + request[2]]


def _under_quota_with_job(left: QueueAttributes, right: QueueAttributes, lreq: Request, rreq: Request) -> int:
    left_starved = less_equal(_with(left.allocated, lreq), left.deserved())
    right_starved = less_equal(_with(right.allocated, rreq), right.deserved())
    if left_starved != right_starved:
        return -1 if left_starved else 1
    return 0


def _priority(left: QueueAttributes, right: QueueAttributes) -> int:
    if left.priority != right.priority:
        return -1 if left.priority > right.priority else 1
    return 0


def _violates_zero_share(queue: QueueAttributes, request: Request) -> bool:
    with_job = _with(queue.allocated, request)
    return any(share == 0 and amount > 0 for share, amount in zip(queue.allocatable_share(), with_job, strict=True))


def _zero_share(left: QueueAttributes, right: QueueAttributes, lreq: Request, rreq: Request) -> int:
    left_bad, right_bad = _violates_zero_share(left, lreq), _violates_zero_share(right, rreq)
    if left_bad != right_bad:
        return 1 if left_bad else -1
    return 0


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
    total: Quantities,
) -> int:
    """KAI's queue comparison; requests are the next jobs' needs, victims the allocations already chosen (asked
    for only when the dominant-resource rule is reached: summing them is most of the cost of a victim queue)."""
    rule = (  # the first decisive rule wins, and the rules after it are not computed
        _under_utilized(left, right)
        or _under_quota_with_job(left, right, left_request, right_request)
        or _priority(left, right)
        or _zero_share(left, right, left_request, right_request)
    )
    if rule:
        return rule
    left_drf = left.dominant_share(total, _share_with(left, left_request, left_victims()))
    right_drf = right.dominant_share(total, _share_with(right, right_request, right_victims()))
    rule = _compare(left_drf, right_drf) or _compare(left.dominant_share(total), right.dominant_share(total))
    if rule:
        return rule
    rule = _allocatable_share(left, right)
    if rule:
        return rule
    return -1 if left.creation_ts < right.creation_ts else 1


def _share_with(queue: QueueAttributes, request: Request, victims: list[Request]) -> list[float]:
    allocated = _with(queue.allocated, request)
    for victim in victims:
        allocated = [a - v for a, v in zip(allocated, victim, strict=True)]
    return allocated
