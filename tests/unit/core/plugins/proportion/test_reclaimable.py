"""proportion's reclaim victim filter (KAI v0.17's FilterVictim): victims only from queues some reclaim strategy
could take from, so that an unreclaimable queue ordered first as a victim does not hide a reclaimable one.

Built on KAI's TestReclaimAnchorVictim (pkg/scheduler/actions/reclaim/reclaim_anchor_victim_test.go): root (10
GPUs) holds org-parent (6; priority 110) with reclaimer-queue (4) and batch-queue (0), and protected-queue (4;
priority 100). Both top queues are under their fair share, so the victim order falls to queue priority and
protected-queue's job comes first; it is under its deserved quota, so no strategy may take from it.
"""

import random
from typing import Any

import pytest
from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.actions import reclaim
from kai.core.config import parse_config
from kai.core.cycle import close_session, open_session, run_cycle
from kai.core.framework.decisions import CycleResult
from kai.core.plugins.proportion.attributes import QueueAttributes
from kai.core.plugins.proportion.reclaimable import may_reclaim_from
from kai.core.plugins.proportion.resource_division import UNLIMITED, QueueShares, ResourceShare
from kai.core.state.snapshot import take_snapshot


def _queue(name: str, parent: str, gpus: float, priority: int) -> dict[str, Any]:
    raw = queue(name, parent, gpus)
    raw["spec"]["priority"] = priority
    return raw


def _topology(protected: bool) -> list[tuple[str, dict[str, Any]]]:
    objects: list[tuple[str, dict[str, Any]]] = [
        ("Queue", _queue("root", "", 10, 100)),
        ("Queue", _queue("org-parent", "root", 6, 110)),
        ("Queue", _queue("reclaimer-queue", "org-parent", 4, 75)),
        ("Queue", _queue("batch-queue", "org-parent", 0, 25)),
        ("Node", node("node-batch-1", 2)),
        ("Node", node("node-batch-2", 2)),
        ("Node", node("node-spare", 1)),  # keeps both top queues under their fair share; fits no 2-GPU pod
    ]
    jobs = [("batch-job-a", "batch-queue", "node-batch-1"), ("batch-job-b", "batch-queue", "node-batch-2")]
    if protected:
        objects += [("Queue", _queue("protected-queue", "root", 4, 100)), ("Node", node("node-protected", 2))]
        jobs.insert(0, ("protected-job", "protected-queue", "node-protected"))
    jobs.append(("reclaimer-job", "reclaimer-queue", ""))
    for i, (name, queue_name, node_name) in enumerate(jobs):
        objects.append(("PodGroup", podgroup(name, queue_name, T0 - 100 + i, minMember=1)))
        objects.append(("Pod", pod(f"{name}-0", name, gpus=2, node_name=node_name)))
    return objects


def _reclaim(protected: bool) -> CycleResult:
    state = cluster(*_topology(protected))
    return run_cycle(take_snapshot(state, "kai-scheduler"), parse_config({"actions": "reclaim"}), T0).result


def test_a_reclaimable_queue_behind_a_protected_one_is_reclaimed() -> None:
    """The protected queue's job is no victim at all: the search is the one without it (without the filter, its
    scenario is simulated first and refused by the validator)."""
    result, control = _reclaim(protected=True), _reclaim(protected=False)
    for outcome in (result, control):
        assert [p.pod_key for p in outcome.pipelined] == ["default/reclaimer-job-0"]
        assert [e.pod_key for e in outcome.evictions] == ["default/batch-job-b-0"]
    assert result.search.scenarios == control.search.scenarios
    assert not any(state == "validator_rejected" for _, _, state in result.search.scenarios)


def _attributes(uid: str, parent: str, deserved: float, allocated: float, fair: float) -> QueueAttributes:
    gpu = ResourceShare(deserved, UNLIMITED, 1.0, 0.0, fair_share=fair)
    unlimited = ResourceShare(UNLIMITED, UNLIMITED, 1.0, 0.0, fair_share=UNLIMITED)
    shares = QueueShares(uid, uid, 0.0, 100, gpu, unlimited, unlimited)
    return QueueAttributes(uid, uid, parent, [], 0.0, 100, shares, allocated=[0.0, 0.0, allocated])


@pytest.mark.parametrize(
    ("reclaimer_allocated", "victim_allocated", "victim_fair", "expected"),
    [
        (0, 5, 4, True),  # reclaimer within deserved, victim above its deserved 4
        (0, 4, 6, True),  # victim at deserved: under it in no resource the reclaimer asks for
        (0, 3, 6, False),  # victim under deserved
        (4, 7, 6, True),  # reclaimer would leave deserved: the victim must be above its allocatable share (6)
        (4, 6, 6, False),
        (4, 5, 4, True),
    ],
)
def test_may_reclaim_from(
    reclaimer_allocated: float, victim_allocated: float, victim_fair: float, expected: bool
) -> None:
    queues = {
        "top": _attributes("top", "", UNLIMITED, 0, UNLIMITED),
        "mine": _attributes("mine", "top", 4, reclaimer_allocated, 4),
        "theirs": _attributes("theirs", "top", 4, victim_allocated, victim_fair),
    }
    assert may_reclaim_from(queues, "mine", (0.0, 0.0, 1.0), "theirs") is expected


def _random_cluster(draw: random.Random) -> list[tuple[str, dict[str, Any]]]:
    leaves = [(f"q{d}{q}", f"dept{d}") for d in range(2) for q in range(3)]
    objects: list[tuple[str, dict[str, Any]]] = [
        ("Queue", queue(f"dept{d}", "", draw.choice([6, 10]))) for d in range(2)
    ]
    objects += [("Queue", queue(name, parent, draw.choice([0, 2, 4]))) for name, parent in leaves]
    nodes = [f"n{i}" for i in range(6)]
    objects += [("Node", node(name, 4)) for name in nodes]
    free = dict.fromkeys(nodes, 4)
    for i in range(draw.randint(6, 14)):
        name, leaf = f"job{i}", draw.choice(leaves)[0]
        gpus, size = draw.choice([1, 2]), draw.choice([1, 1, 2])
        places = [n for n in nodes if free[n] >= gpus]
        running = len(places) >= size and draw.random() < 0.7
        objects.append(("PodGroup", podgroup(name, leaf, T0 - 1000 + i, minMember=size)))
        for k in range(size):
            where = ""
            if running:
                where = draw.choice([n for n in nodes if free[n] >= gpus])
                free[where] -= gpus
            objects.append(("Pod", pod(f"{name}-{k}", name, gpus=gpus, node_name=where)))
    return objects


def _decided(scan: bool, objects: list[tuple[str, dict[str, Any]]]) -> list[list[str]]:
    ssn = open_session(take_snapshot(cluster(*objects), "kai-scheduler"), parse_config({"actions": "reclaim"}), T0)
    if scan:  # a filter that is neither scoped nor by queue makes reclaim scan every job
        ssn.reclaim_victim_filters.append(lambda _pending, _victim: True)
    reclaim.execute(ssn)
    close_session(ssn)
    result = ssn.result
    return [[e.pod_key for e in result.evictions], [p.pod_key for p in result.pipelined], sorted(result.unschedulable)]


def test_victims_from_the_index_are_those_of_a_scan() -> None:
    """The indexed victims queue (refused queues left out) decides as a scan asking every filter about every job."""
    draw = random.Random(7)
    evicted = 0
    for _ in range(60):
        objects = _random_cluster(draw)
        indexed = _decided(False, objects)
        assert indexed == _decided(True, objects)
        evicted += bool(indexed[0])
    assert evicted >= 5  # the clusters do exercise reclaim
