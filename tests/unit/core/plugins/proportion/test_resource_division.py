"""Fair-share division: cases ported from KAI's resource_division_test.go, resource_share_test.go and the
hierarchy cases of proportion_test.go, plus the time-based-fairness (k-value) and rounding quirks, whose
expected numbers were checked against KAI's Go code."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from kai.core.plugins.proportion.resource_division import (
    UNLIMITED,
    QueueShares,
    Resource,
    ResourceShare,
    ResourceTotals,
    divide_among_siblings,
    divide_over_quota,
    divide_resource,
    divide_tree,
    requestable,
)


def share(
    deserved: float = 0.0,
    request: float = 0.0,
    weight: float = 0.0,
    max_allowed: float = UNLIMITED,
    usage: float = 0.0,
    fair_share: float = 0.0,
) -> ResourceShare:
    return ResourceShare(
        deserved=deserved,
        max_allowed=max_allowed,
        over_quota_weight=weight,
        request=request,
        usage=usage,
        fair_share=fair_share,
    )


def empty() -> ResourceShare:
    """KAI's EmptyResource(): every field zero (so max_allowed is 0, not unlimited)."""
    return ResourceShare(deserved=0.0, max_allowed=0.0, over_quota_weight=0.0, request=0.0)


def queue(
    uid: str,
    *,
    gpu: ResourceShare | None = None,
    cpu: ResourceShare | None = None,
    memory: ResourceShare | None = None,
    priority: int = 0,
    creation_ts: float = 0.0,
) -> QueueShares:
    return QueueShares(
        uid=uid,
        name=f"queue-{uid}",
        creation_ts=creation_ts,
        priority=priority,
        gpu=gpu or empty(),
        cpu=cpu or empty(),
        memory=memory or empty(),
    )


def shares(queues: list[QueueShares], resource: Resource = Resource.GPU) -> dict[str, float]:
    return {q.uid: q.share(resource).fair_share for q in queues}


# --- resource_share_test.go --------------------------------------------------------------------------------


def test_requestable_is_capped_by_max_allowed() -> None:
    assert requestable(share(deserved=21, request=17, weight=2, max_allowed=10)) == 10


def test_requestable_is_request_when_unlimited() -> None:
    assert requestable(share(deserved=21, request=17, weight=2)) == 17


def test_requestable_is_request_when_below_limit() -> None:
    assert requestable(share(request=3.5, max_allowed=10)) == 3.5


# --- setResourceShare - GPU: single queue within quota -----------------------------------------------------


@pytest.mark.parametrize(
    ("total", "deserved", "requested", "max_allowed", "remaining", "fair_share"),
    [
        pytest.param(2, 3, 2, UNLIMITED, 0, 2, id="gives requested - no remaining"),
        pytest.param(3, 3, 2, UNLIMITED, 1, 2, id="gives requested - with remaining"),
        pytest.param(3, 3, 2, 2, 1, 2, id="not more than allowed"),
        pytest.param(1, 3, 2, UNLIMITED, 0, 2, id="up to deserved when over subscribed"),
        pytest.param(7, 3, 5, UNLIMITED, 4, 3, id="up to full quota"),
        pytest.param(2, 1.5, 2, UNLIMITED, 0.5, 1.5, id="fraction in deserved"),
        pytest.param(2, 3, 1.5, UNLIMITED, 0.5, 1.5, id="fraction in request"),
        pytest.param(2, 0, 2, UNLIMITED, 2, 0, id="nothing when deserved is zero and weight is zero"),
    ],
)
def test_single_queue_within_quota(
    total: float, deserved: float, requested: float, max_allowed: float, remaining: float, fair_share: float
) -> None:
    queues = [queue("1", gpu=share(deserved=deserved, request=requested, max_allowed=max_allowed))]
    assert divide_resource(total, queues, Resource.GPU, 0) == remaining
    assert queues[0].gpu.fair_share == fair_share


# --- setResourceShare - GPU: single queue over quota (divideOverQuotaResource on a preset fair share) ------


@pytest.mark.parametrize(
    ("amount", "changes", "remaining", "fair_share"),
    [
        pytest.param(2, {}, 0, 5, id="gives requested - no remaining"),
        pytest.param(3, {}, 1, 5, id="gives requested - with remaining"),
        pytest.param(2, {"max_allowed": 4}, 1, 4, id="not more than allowed"),
        pytest.param(2, {"over_quota_weight": 0}, 2, 3, id="nothing when weight is zero"),
        pytest.param(2, {"request": 4.5}, 0.5, 4.5, id="fraction if requested"),
        pytest.param(0.5, {}, 0, 3.5, id="gives remainder fraction"),
        pytest.param(6, {"deserved": 0, "fair_share": 0}, 1, 5, id="when deserved is zero"),
        pytest.param(0, {}, 0, 3, id="zero to divide"),
        pytest.param(10, {"over_quota_weight": 0}, 10, 3, id="nothing of 10 when weight is zero"),
    ],
)
def test_single_queue_over_quota(amount: float, changes: dict[str, float], remaining: float, fair_share: float) -> None:
    gpu = share(deserved=3, request=5, weight=1, fair_share=3)
    for field, value in changes.items():
        setattr(gpu, field, value)
    queues = [queue("1", gpu=gpu)]
    assert divide_over_quota(amount, queues, Resource.GPU, 0) == remaining
    assert queues[0].gpu.fair_share == fair_share


def test_two_queues_over_quota_weight_zero_gets_nothing() -> None:
    queues = [
        queue("1", gpu=share(deserved=3, request=5, weight=0, fair_share=3)),
        queue("2", gpu=share(deserved=3, request=3, weight=1, fair_share=3)),
    ]
    assert divide_over_quota(10, queues, Resource.GPU, 0) == 10
    assert shares(queues) == {"1": 3, "2": 3}


# --- setResourceShare - GPU: two queues table --------------------------------------------------------------


@pytest.mark.parametrize(
    ("total", "requested", "max_allowed", "weights", "priorities", "remaining", "expected"),
    [
        pytest.param(15, {}, {}, {}, {}, 3, {"1": 6, "2": 6}, id="allocates many available gpus"),
        pytest.param(12, {}, {}, {}, {}, 0, {"1": 6, "2": 6}, id="allocates exact requested amount"),
        pytest.param(8, {}, {}, {"1": 1, "2": 3}, {}, 0, {"1": 3, "2": 5}, id="allocates proportionally"),
        pytest.param(12, {}, {"1": 5}, {}, {}, 1, {"1": 5, "2": 6}, id="not more than allowed"),
        # 7 over quota split 1:4 = 1.4 / 5.6 -> 1 / 5; the larger remainder (0.6) gets the last GPU.
        pytest.param(11, {"1": 10, "2": 10}, {}, {"1": 1, "2": 4}, {}, 0, {"1": 3, "2": 8}, id="remainder by largest"),
        # 7 over quota split evenly = 3.5 each -> 3 each; the older queue gets the last GPU.
        pytest.param(11, {}, {}, {}, {}, 0, {"1": 6, "2": 5}, id="remainder by creation time"),
        pytest.param(4, {}, {}, {}, {"1": 1, "2": 2}, 0, {"1": 2, "2": 2}, id="priority not in deserved"),
        pytest.param(6, {}, {}, {}, {"1": 1, "2": 2}, 0, {"1": 2, "2": 4}, id="priority in over-quota"),
        pytest.param(6, {}, {}, {"1": 100, "2": 1}, {"1": 1, "2": 2}, 0, {"1": 2, "2": 4}, id="priority beats weight"),
    ],
)
def test_two_queues(
    total: float,
    requested: dict[str, float],
    max_allowed: dict[str, float],
    weights: dict[str, float],
    priorities: dict[str, int],
    remaining: float,
    expected: dict[str, float],
) -> None:
    queues = [
        queue(
            uid,
            creation_ts=ts,
            priority=priorities.get(uid, 0),
            gpu=share(
                deserved=2,
                request=requested.get(uid, 6),
                weight=weights.get(uid, 2),
                max_allowed=max_allowed.get(uid, UNLIMITED),
            ),
        )
        for uid, ts in (("1", 100.0), ("2", 100.5))
    ]
    assert divide_resource(total, queues, Resource.GPU, 0) == remaining
    assert shares(queues) == expected


def test_remainder_ties_broken_by_uid_when_created_together() -> None:
    """KAI 'divide last remaining GPU based to similar queues': 0.5/0.5 split, same creation time."""
    queues = [
        queue(uid, creation_ts=50.0, gpu=share(deserved=2, request=3, weight=2)) for uid in ("queue-2", "queue-1")
    ]
    divide_among_siblings(ResourceTotals(gpu=5, cpu=0, memory=0), queues, 0)
    assert shares(queues) == {"queue-1": 3, "queue-2": 2}


def test_remainder_divided_even_when_using_priorities() -> None:
    queues = [
        queue("1", priority=2, creation_ts=1, gpu=share(deserved=2, request=5, weight=2)),
        queue("2", priority=2, creation_ts=2, gpu=share(deserved=2, request=5, weight=2)),
        queue("3", priority=1, creation_ts=3, gpu=share(deserved=1, request=0, weight=2)),
    ]
    assert divide_resource(5, queues, Resource.GPU, 0) == 0
    assert shares(queues) == {"1": 3, "2": 2, "3": 0}


# --- setResourceShare - CPU and memory (identical cases in KAI) --------------------------------------------

CPU_AND_MEMORY = pytest.mark.parametrize("resource", [Resource.CPU, Resource.MEMORY])


def queues_for(resource: Resource, specs: dict[str, ResourceShare]) -> list[QueueShares]:
    return [queue(uid, **{resource.value: spec}) for uid, spec in specs.items()]


@CPU_AND_MEMORY
@pytest.mark.parametrize(("total", "remaining"), [(3000, 1000), (1000, 0)])
def test_one_queue_cpu_memory(resource: Resource, total: float, remaining: float) -> None:
    queues = queues_for(resource, {"1": share(deserved=3000, request=2000, weight=3000)})
    assert divide_resource(total, queues, resource, 0) == remaining
    assert shares(queues, resource) == {"1": 2000}


@CPU_AND_MEMORY
def test_queue_without_deserved_or_weight_gets_nothing(resource: Resource) -> None:
    queues = queues_for(
        resource,
        {
            "1": share(deserved=5000, request=10000, weight=5000),
            "2": share(deserved=0, request=5000, weight=0),
        },
    )
    assert divide_resource(10000, queues, resource, 0) == 0
    assert shares(queues, resource) == {"1": 10000, "2": 0}


@CPU_AND_MEMORY
@pytest.mark.parametrize(
    ("total", "requests", "max_allowed", "deserved", "expected"),
    [
        pytest.param(10000, (5000, 5000, 5000), UNLIMITED, 5000, (5000, 5000, 5000), id="over subscription"),
        pytest.param(18000, (6000, 6000, 6000), UNLIMITED, 5000, (6000, 6000, 6000), id="over quota"),
        pytest.param(10000, (7000, 2000, 2000), UNLIMITED, 5000, (6000, 2000, 2000), id="one requests more"),
        pytest.param(10000, (7000, 5000, 2000), UNLIMITED, 5000, (5000, 5000, 2000), id="deserved first"),
        pytest.param(10000, (7000, 2000, 2000), 7000, 5000, (6000, 2000, 2000), id="more, limited"),
        pytest.param(10000, (5000, 5000, 5000), UNLIMITED, 0, (5000, 0, 5000), id="q2 has no deserved"),
        pytest.param(10000, (10000, 5000, 10000), UNLIMITED, 0, (5000, 0, 5000), id="q2 no deserved, q1 q3 more"),
    ],
)
def test_three_queues_cpu_memory(
    resource: Resource,
    total: float,
    requests: tuple[float, float, float],
    max_allowed: float,
    deserved: float,
    expected: tuple[float, float, float],
) -> None:
    """Queue 1 may carry a limit; queue 2's deserved varies; every queue's weight is 5000."""
    queues = queues_for(
        resource,
        {
            "1": share(deserved=5000, request=requests[0], weight=5000, max_allowed=max_allowed),
            "2": share(deserved=deserved, request=requests[1], weight=5000),
            "3": share(deserved=5000, request=requests[2], weight=5000),
        },
    )
    assert divide_resource(total, queues, resource, 0) == 0
    assert shares(queues, resource) == dict(zip(("1", "2", "3"), expected, strict=True))


# --- SetResourcesShare table (all three resources at once) -------------------------------------------------


def test_one_queue_enough_resources_gets_all_requests() -> None:
    q = queue(
        "1",
        gpu=share(deserved=1, request=1, weight=1),
        cpu=share(deserved=200, request=500, weight=1),
        memory=share(deserved=1000, request=500, weight=1),
    )
    divide_among_siblings(ResourceTotals(gpu=10, cpu=2500, memory=1000), [q], 0)
    assert (q.gpu.fair_share, q.cpu.fair_share, q.memory.fair_share) == (1, 500, 500)


def test_one_queue_not_enough_resources_gets_deserved_or_whole_cluster() -> None:
    q = queue(
        "1",
        gpu=share(deserved=2, request=3, weight=1),
        cpu=share(deserved=20000, request=2500, weight=1),
        memory=share(deserved=1000, request=5000, weight=1),
    )
    divide_among_siblings(ResourceTotals(gpu=1, cpu=1000, memory=3000), [q], 0)
    assert (q.gpu.fair_share, q.cpu.fair_share, q.memory.fair_share) == (2, 2500, 3000)


def test_two_queues_enough_resources_get_all_requests() -> None:
    queues = [
        queue(
            uid,
            gpu=share(deserved=1, request=1, weight=1),
            cpu=share(deserved=200, request=500, weight=1),
            memory=share(deserved=1000, request=500, weight=1),
        )
        for uid in ("1", "2")
    ]
    divide_among_siblings(ResourceTotals(gpu=10, cpu=2500, memory=1000), queues, 0)
    assert [(q.gpu.fair_share, q.cpu.fair_share, q.memory.fair_share) for q in queues] == [(1, 500, 500)] * 2


def all_resources(spec: ResourceShare) -> dict[str, ResourceShare]:
    return {
        name: share(
            deserved=spec.deserved,
            request=spec.request,
            weight=spec.over_quota_weight,
            max_allowed=spec.max_allowed,
        )
        for name in ("gpu", "cpu", "memory")
    }


@pytest.mark.parametrize(
    ("total", "specs", "expected"),
    [
        pytest.param(
            (10, 10, 10),
            [share(deserved=1, request=8, weight=1)] * 2,
            [(5, 5, 5)] * 2,
            id="two queues: divide evenly",
        ),
        pytest.param(
            (1000, 1000, 1000),
            [share(deserved=250, request=5000, weight=1), share(deserved=150, request=5000, weight=2)],
            [(450, 450, 450), (550, 550, 550)],
            id="two queues: different over-quota weight",
        ),
        pytest.param(
            (1000, 1000, 1000),
            [
                share(deserved=250, request=5000, weight=1),
                share(deserved=150, request=5000, weight=2, max_allowed=400),
            ],
            [(600, 600, 600), (400, 400, 400)],
            id="two queues: different weight and max allowed",
        ),
        pytest.param(
            (9999, 9999, 9999),
            [share(deserved=1000, request=10000, weight=1)] * 3,
            [(3333, 3333, 3333)] * 3,
            id="three queues: divide evenly",
        ),
        pytest.param(
            (9999, 9999, 9999),
            [share(request=10000, weight=6), share(request=10000, weight=2), share(request=10000, weight=1)],
            [(6666, 6666, 6666), (2222, 2222, 2222), (1111, 1111, 1111)],
            id="three queues: different weights",
        ),
    ],
)
def test_set_resources_share(
    total: tuple[float, float, float],
    specs: list[ResourceShare],
    expected: list[tuple[float, float, float]],
) -> None:
    queues = [queue(str(i), **all_resources(spec)) for i, spec in enumerate(specs)]
    divide_among_siblings(ResourceTotals(gpu=total[0], cpu=total[1], memory=total[2]), queues, 0)
    assert [(q.gpu.fair_share, q.cpu.fair_share, q.memory.fair_share) for q in queues] == expected


def test_two_queues_cpu_memory_first_come_first_serve() -> None:
    """KAI 'Request more than total with same Over Quota and deserved': deserved sums exceed the total."""
    queues = [
        queue(
            uid,
            gpu=share(deserved=1, request=8, weight=1),
            cpu=share(deserved=2000, request=3000, weight=1),
            memory=share(deserved=1000, request=5000, weight=1),
        )
        for uid in ("1", "2")
    ]
    divide_among_siblings(ResourceTotals(gpu=10, cpu=3000, memory=1000), queues, 0)
    assert [(q.gpu.fair_share, q.cpu.fair_share, q.memory.fair_share) for q in queues] == [(5, 2000, 1000)] * 2


def test_fractional_fair_share_is_exact() -> None:
    queues = [
        queue("1", gpu=share(deserved=12, request=32.54999999999996, weight=12)),
        queue("2", gpu=share(deserved=7, request=9.5, weight=7)),
        queue("3", gpu=share(deserved=2, request=1.65, weight=2, max_allowed=2)),
    ]
    assert divide_resource(45, queues, Resource.GPU, 0) == 1.3000000000000398
    assert shares(queues) == {"1": 32.54999999999996, "2": 9.5, "3": 1.65}


def test_unlimited_deserved_means_whole_total() -> None:
    """The fairshare-simulator README example: CPU and memory default to deserved -1, request 100000."""
    queues = [
        queue(
            uid,
            gpu=share(deserved=10, request=100, weight=weight),
            cpu=share(deserved=UNLIMITED, request=100000, weight=1),
            memory=share(deserved=UNLIMITED, request=100000, weight=1),
        )
        for uid, weight in (("queue1", 3), ("queue2", 1))
    ]
    divide_among_siblings(ResourceTotals(gpu=100, cpu=16000, memory=32000000), queues, 1.0)
    assert [(q.gpu.fair_share, q.cpu.fair_share, q.memory.fair_share) for q in queues] == [
        (70, 16000, 100000),
        (30, 16000, 100000),
    ]


# --- time-based fairness (k-value and usage) ---------------------------------------------------------------


def two_queues_with_usage(usage_a: float) -> list[QueueShares]:
    return [
        queue("a", gpu=share(request=100, weight=1, usage=usage_a)),
        queue("b", gpu=share(request=100, weight=1)),
    ]


def test_usage_lowers_over_quota_share() -> None:
    """w' = 0.5 each; a: 0.5 + (0.5 - 0.6) = 0.4, b: 1.0 -> 2.86 and 7.14; a has the larger fraction."""
    queues = two_queues_with_usage(0.6)
    assert divide_resource(10, queues, Resource.GPU, 1.0) == 0
    assert shares(queues) == {"a": 3, "b": 7}


def test_k_value_zero_ignores_usage() -> None:
    queues = two_queues_with_usage(0.6)
    divide_resource(10, queues, Resource.GPU, 0.0)
    assert shares(queues) == {"a": 5, "b": 5}


def test_heavy_usage_floors_share_weight_at_zero() -> None:
    queues = two_queues_with_usage(2.0)
    divide_resource(10, queues, Resource.GPU, 1.0)
    assert shares(queues) == {"a": 0, "b": 10}


def test_all_share_weights_zero_leaves_resources_undivided() -> None:
    queues = [queue("a", gpu=share(deserved=2, request=100, weight=1, usage=3.0))]
    assert divide_resource(10, queues, Resource.GPU, 1.0) == 8
    assert shares(queues) == {"a": 2}


def test_no_usage_makes_k_value_irrelevant() -> None:
    for k_value in (0.0, 1.0, 10.0):
        queues = [
            queue("1", gpu=share(deserved=2, request=10, weight=1)),
            queue("2", gpu=share(deserved=2, request=10, weight=4)),
        ]
        divide_resource(11, queues, Resource.GPU, k_value)
        assert shares(queues) == {"1": 3, "2": 8}


# --- KAI quirks reproduced on purpose ----------------------------------------------------------------------


def test_lower_priority_takes_what_higher_priority_rounded_away() -> None:
    """Three priority-1 queues each get a candidate of 2/3, rounded to 0; priority 0 then takes both GPUs."""
    queues = [queue(uid, priority=1, gpu=share(request=10, weight=1)) for uid in "abc"]
    queues.append(queue("d", priority=0, gpu=share(request=10, weight=1)))
    assert divide_resource(2, queues, Resource.GPU, 0) == 0
    assert shares(queues) == {"a": 0, "b": 0, "c": 0, "d": 2}


def test_leftover_pass_ignores_limit_and_request() -> None:
    """Both candidates are 0.5 (rounded to 0); 'b' wins the tie by UID and gets 1.0, above its 0.7 limit."""
    queues = [
        queue("b", gpu=share(request=100, weight=1, max_allowed=0.7)),
        queue("c", gpu=share(request=100, weight=1)),
    ]
    divide_resource(1, queues, Resource.GPU, 0)
    assert shares(queues) == {"b": 1.0, "c": 0}


def test_fraction_from_an_earlier_round_is_kept_when_candidate_is_whole() -> None:
    """Round 1: q1's candidate 0.857 -> 0 (fraction 0.857), q2 is satisfied.  Round 2: q1's candidate is
    exactly 1, so its stale 0.857 beats q0's fresh 0.75 for the last GPU."""
    queues = [
        queue("q0", gpu=share(request=7, weight=3)),
        queue("q1", gpu=share(request=9, weight=4)),
        queue("q2", gpu=share(request=1, weight=6)),
        queue("q3", gpu=share(request=7, weight=1)),
    ]
    divide_resource(3, queues, Resource.GPU, 0)
    assert shares(queues) == {"q0": 0, "q1": 2, "q2": 1, "q3": 0}


def test_limit_at_or_below_fair_share_stops_over_quota() -> None:
    queues = [
        queue("1", gpu=share(deserved=4, request=10, weight=1, max_allowed=4)),
        queue("2", gpu=share(deserved=0, request=10, weight=1)),
    ]
    assert divide_resource(12, queues, Resource.GPU, 0) == 0
    assert shares(queues) == {"1": 4, "2": 8}


# --- properties of this implementation ---------------------------------------------------------------------


def test_recomputing_resets_previous_fair_shares() -> None:
    queues = [
        queue("1", gpu=share(deserved=1, request=4, weight=1)),
        queue("2", gpu=share(request=4, weight=1)),
    ]
    divide_resource(6, queues, Resource.GPU, 0)
    first = shares(queues)
    divide_resource(6, queues, Resource.GPU, 0)
    assert shares(queues) == first == {"1": 4.0, "2": 2.0}


def test_result_does_not_depend_on_sibling_order() -> None:
    specs = {
        "q0": share(deserved=1, request=7.5, weight=3),
        "q1": share(request=9, weight=4, usage=0.2),
        "q2": share(deserved=0.5, request=1, weight=6),
        "q3": share(request=7, weight=1, max_allowed=2.5),
    }
    results = []
    for order in itertools.permutations(specs):
        queues = [queue(uid, creation_ts=float(uid[1]), gpu=dataclasses.replace(specs[uid])) for uid in order]
        divide_resource(9.5, queues, Resource.GPU, 0.5)
        results.append(shares(queues))
    assert all(result == results[0] for result in results)
    assert results[0] == {"q0": 4.0, "q1": 3.5, "q2": 1.0, "q3": 1.0}


# --- hierarchy (proportion_test.go, setFairShare) ----------------------------------------------------------


def test_tree_single_top_queue() -> None:
    top = queue("top-queue", gpu=share(deserved=3, request=3))
    mid = queue("mid-queue", gpu=share(deserved=3, request=3))
    leaf1 = queue("leaf-queue-1", gpu=share(deserved=2, request=2))
    leaf2 = queue("leaf-queue-2", gpu=share(deserved=1, request=1))
    divide_tree(
        ResourceTotals(gpu=3, cpu=0, memory=0),
        [top],
        {"top-queue": [mid], "mid-queue": [leaf1, leaf2]},
        1.0,
    )
    assert shares([top, mid, leaf1, leaf2]) == {
        "top-queue": 3,
        "mid-queue": 3,
        "leaf-queue-1": 2,
        "leaf-queue-2": 1,
    }


def test_tree_two_top_queues() -> None:
    top1 = queue("top-queue-1", gpu=share(deserved=2, request=2))
    top2 = queue("top-queue-2", gpu=share(deserved=2, request=2))
    children = {
        "top-queue-1": [
            queue("child-queue-1", gpu=share(deserved=1, request=1)),
            queue("child-queue-2", gpu=share(deserved=1, request=1)),
        ],
        "top-queue-2": [
            queue("child-queue-3", gpu=share(deserved=0, request=0)),
            queue("child-queue-4", gpu=share(deserved=1, request=2, weight=1)),
        ],
    }
    divide_tree(ResourceTotals(gpu=4, cpu=0, memory=0), [top1, top2], children, 1.0)
    assert shares([top1, top2, *children["top-queue-1"], *children["top-queue-2"]]) == {
        "top-queue-1": 2,
        "top-queue-2": 2,
        "child-queue-1": 1,
        "child-queue-2": 1,
        "child-queue-3": 0,
        "child-queue-4": 2,
    }


@pytest.mark.parametrize(
    ("total", "deserved", "weights", "priorities", "expected"),
    [
        pytest.param(4, {}, {}, {}, (2, 2, 2, 2), id="sanity"),
        # d2 receives 1 but its child keeps its deserved 2: children are not capped by the parent's share.
        pytest.param(4, {"d1": 3, "d2": 1}, {}, {}, (3, 3, 1, 2), id="deserved department quota"),
        pytest.param(12, {"d1": 3, "d2": 1}, {}, {}, (7, 7, 5, 5), id="over-quota"),
        pytest.param(12, {"d1": 3, "d2": 1}, {"d1": 1, "d2": 7}, {}, (4, 4, 8, 8), id="over-quota weight"),
        pytest.param(12, {"d1": 3, "d2": 1}, {"d1": 7, "d2": 1}, {}, (10, 10, 2, 2), id="weight reversed"),
        pytest.param(
            12,
            {"d1": 1, "q1": 1, "d2": 1, "q2": 1},
            {"d1": 7, "d2": 1},
            {"d1": 1, "d2": 2},
            (1, 1, 11, 11),
            id="priority",
        ),
        pytest.param(
            12,
            {"d1": 1, "q1": 1, "d2": 1, "q2": 1},
            {"d1": 1, "d2": 7},
            {"d1": 2, "d2": 1},
            (11, 11, 1, 1),
            id="priority reversed",
        ),
    ],
)
def test_tree_two_departments(
    total: float,
    deserved: dict[str, float],
    weights: dict[str, float],
    priorities: dict[str, int],
    expected: tuple[float, float, float, float],
) -> None:
    nodes = {
        uid: queue(
            uid,
            priority=priorities.get(uid, 0),
            gpu=share(deserved=deserved.get(uid, 2), request=100, weight=weights.get(uid, 1)),
        )
        for uid in ("d1", "q1", "d2", "q2")
    }
    divide_tree(
        ResourceTotals(gpu=total, cpu=0, memory=0),
        [nodes["d1"], nodes["d2"]],
        {"d1": [nodes["q1"]], "d2": [nodes["q2"]]},
        1.0,
    )
    assert shares(list(nodes.values())) == dict(zip(("d1", "q1", "d2", "q2"), expected, strict=True))


def test_tree_children_split_the_parent_fair_share_of_every_resource() -> None:
    parent = queue(
        "p",
        gpu=share(deserved=1, request=10, weight=1),
        cpu=share(deserved=UNLIMITED, request=3000, weight=1),
        memory=share(deserved=0, request=100, weight=1),
    )
    other = queue("o", gpu=share(deserved=1, request=10, weight=1), memory=share(request=100, weight=1))
    child = queue(
        "c",
        gpu=share(request=10, weight=1),
        cpu=share(request=5000, weight=1),
        memory=share(request=100, weight=1),
    )
    divide_tree(ResourceTotals(gpu=6, cpu=4000, memory=64), [parent, other], {"p": [child]}, 1.0)
    assert (parent.gpu.fair_share, parent.cpu.fair_share, parent.memory.fair_share) == (3, 3000, 32)
    assert (child.gpu.fair_share, child.cpu.fair_share, child.memory.fair_share) == (3, 3000, 32)
