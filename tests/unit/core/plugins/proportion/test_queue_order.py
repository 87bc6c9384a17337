"""The proportion queue order with remembered standings against the rules written out one by one (the order as
it was before ``Standings``), on random queues whose allocations change and come back between comparisons; the
victims' holdings it remembers against fresh sums."""

import random
from collections.abc import Callable
from typing import Any

from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.cycle import open_session
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.statement import Statement
from kai.core.plugins.proportion.attributes import Quantities, QueueAttributes, less_equal, strictly_less
from kai.core.plugins.proportion.plugin import ProportionPlugin, _job_allocated
from kai.core.plugins.proportion.queue_order import Request, Standings, queue_order
from kai.core.plugins.proportion.resource_division import UNLIMITED, QueueShares, ResourceShare
from kai.core.state.pod_status import PodStatus
from kai.core.state.snapshot import take_snapshot


def _with(allocated: list[float], request: Request) -> list[float]:
    return [a + r for a, r in zip(allocated, request, strict=True)]


def _zero_share_bad(queue: QueueAttributes, request: Request) -> bool:
    with_job = _with(queue.allocated, request)
    return any(share == 0 and amount > 0 for share, amount in zip(queue.allocatable_share(), with_job, strict=True))


def _reference(
    left: QueueAttributes,
    right: QueueAttributes,
    lreq: Request,
    rreq: Request,
    lvictims: list[Request],
    rvictims: list[Request],
    total: Quantities,
) -> int:
    """KAI's rules in order, each worked out when reached."""
    left_over = strictly_less(left.fair_share(), left.allocated)
    right_over = strictly_less(right.fair_share(), right.allocated)
    if left_over != right_over:
        return 1 if left_over else -1
    left_starved = less_equal(_with(left.allocated, lreq), left.deserved())
    right_starved = less_equal(_with(right.allocated, rreq), right.deserved())
    if left_starved != right_starved:
        return -1 if left_starved else 1
    if left.priority != right.priority:
        return -1 if left.priority > right.priority else 1
    left_bad, right_bad = _zero_share_bad(left, lreq), _zero_share_bad(right, rreq)
    if left_bad != right_bad:
        return 1 if left_bad else -1

    def share_with(queue: QueueAttributes, request: Request, victims: list[Request]) -> list[float]:
        allocated = _with(queue.allocated, request)
        for victim in victims:
            allocated = [a - v for a, v in zip(allocated, victim, strict=True)]
        return allocated

    def compare(a: float, b: float) -> int:
        return -1 if a < b else (1 if a > b else 0)

    rule = compare(
        left.dominant_share(total, share_with(left, lreq, lvictims)),
        right.dominant_share(total, share_with(right, rreq, rvictims)),
    ) or compare(left.dominant_share(total), right.dominant_share(total))
    if rule:
        return rule
    lshare, rshare = left.allocatable_share(), right.allocatable_share()
    if not less_equal(rshare, lshare) and less_equal(lshare, rshare):
        return -1
    if not less_equal(lshare, rshare) and less_equal(rshare, lshare):
        return 1
    return -1 if left.creation_ts < right.creation_ts else 1


AMOUNTS = (UNLIMITED, 0.0, 1.0, 2.0, 4.0, 8.0)


def _queue(rng: random.Random, uid: str) -> QueueAttributes:
    def share() -> ResourceShare:
        return ResourceShare(rng.choice(AMOUNTS), rng.choice(AMOUNTS), 1.0, 0.0, fair_share=rng.choice((*AMOUNTS, 3.0)))

    shares = QueueShares(uid, uid, float(rng.randrange(3)), rng.randrange(2), share(), share(), share())
    queue = QueueAttributes(uid, uid, "", [], shares.creation_ts, shares.priority, shares)
    queue.settle()
    return queue


def _amounts(rng: random.Random) -> Request:
    return (float(rng.randrange(4)), float(rng.randrange(4)), rng.choice((0.0, 0.5, 1.0, 3.0)))


def test_remembered_standings_order_as_the_rules_do() -> None:
    rng = random.Random(7)
    for _ in range(40):
        queues = [_queue(rng, f"q{i}") for i in range(4)]
        total = (rng.choice((4.0, 16.0)), rng.choice((4.0, 16.0)), rng.choice((0.0, 8.0)))
        standings = Standings(total)
        states = [[list(_amounts(rng)) for _ in queues] for _ in range(3)]
        for _ in range(300):
            state = rng.choice(states)  # allocations change and come back, as simulations are undone
            for attributes, allocated in zip(queues, state, strict=True):
                attributes.allocated[:] = allocated
            left, right = rng.sample(queues, 2)
            lreq, rreq = _amounts(rng), _amounts(rng)
            lvictims = [_amounts(rng) for _ in range(rng.choice((0, 0, 1, 2)))]
            rvictims = [_amounts(rng) for _ in range(rng.choice((0, 0, 1, 2)))]
            expected = _reference(left, right, lreq, rreq, lvictims, rvictims, total)
            assert queue_order(left, right, lreq, rreq, _given(lvictims), _given(rvictims), standings) == expected


def test_standings_start_afresh_when_full() -> None:
    rng = random.Random(3)
    queue = _queue(rng, "q")
    standings = Standings((8.0, 8.0, 8.0))
    standings.LIMIT = 4
    for gpus in range(10):
        queue.allocated[:] = [0.0, 0.0, float(gpus)]
        assert standings.of(queue, (0.0, 0.0, 1.0)) == standings.of(queue, (0.0, 0.0, 1.0))
        assert len(standings.known) <= 4


def _given(victims: list[Request]) -> Callable[[], list[Request]]:
    return lambda: victims


def test_remembered_holdings_follow_every_status_change() -> None:
    """What the proportion plugin remembers each victim holds (jobs and partial representatives) equals a fresh
    sum through random evictions, re-placements, moves and rollbacks."""
    objects: list[tuple[str, dict[str, Any]]] = [("Queue", queue("q"))]
    objects += [("Node", node(f"n{n}", 8)) for n in range(2)]
    for i in range(5):
        objects.append(("PodGroup", podgroup(f"g{i}", "q", T0 - i, minMember=1)))
        objects += [("Pod", pod(f"p{i}-{k}", f"g{i}", 1 + k % 2, f"n{(i + k) % 2}")) for k in range(i % 3 + 1)]
    config = SchedulerConfig()
    ssn = open_session(take_snapshot(cluster(*objects), config.scheduler_name, T0), config, T0)
    plugin = next(fn.__self__ for fn in ssn.queue_order_fns if isinstance(fn.__self__, ProportionPlugin))
    rng = random.Random(11)
    jobs = list(ssn.jobs.values())
    tasks = [task for job in jobs for task in job.tasks.values()]
    parts = [job.clone_with_tasks(list(job.tasks.values())[:1]) for job in jobs if len(job.tasks) > 1]
    for _ in range(20):
        stmt = Statement(ssn)
        for _ in range(30):
            task, move = rng.choice(tasks), rng.random()
            if move < 0.4:
                stmt.evict(task, "evicted")
            elif move < 0.8 and task.status is PodStatus.RELEASING:
                stmt.pipeline(task, rng.choice(("n0", "n1")), update_if_on_node=rng.random() < 0.5)
            else:
                stmt.rollback(rng.randrange(stmt.checkpoint() + 1))
            victims = rng.sample(jobs + parts, 4)
            assert plugin._allocated(victims) == [_job_allocated(job) for job in victims]
        stmt.discard()
