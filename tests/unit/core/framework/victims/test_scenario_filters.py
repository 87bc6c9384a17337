"""KAI's accumulated scenario filters: victim scenarios that cannot be solved are passed over before simulation, and
the victims chosen are the same."""

import random
from typing import Any

import numpy as np
import pytest
from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.config import parse_config
from kai.core.cycle import run_cycle
from kai.core.framework.decisions import CycleResult
from kai.core.framework.victims.scenario_filters import LargestCapacities, first_fit
from kai.core.state.cluster_state import ClusterState
from kai.core.state.snapshot import take_snapshot

PLUGINS = [
    {"name": n} for n in ("predicates", "proportion", "priority", "elastic", "topology", "subgrouporder", "taskorder")
] + [{"name": "sg-nodelocalgreedy"}, {"name": "sg-multinodegang"}]


@pytest.mark.parametrize(
    ("required", "capacities", "fits"),
    [
        ([4, 2], [4, 3], True),
        ([4, 4], [4, 3], False),
        ([2, 2, 2], [4, 2], True),
        ([3], [2, 2], False),
        ([0.5, 0.5], [1], True),
        ([0, 0], [], True),
        ([1], [], False),
    ],
)
def test_first_fit_takes_the_largest_requirement_first(
    required: list[float], capacities: list[float], fits: bool
) -> None:
    assert first_fit(required, capacities) is fits


def _first_fit_by_scan(required: list[float], capacities: list[float]) -> bool:
    """The plain first fit, each requirement scanning every holder from the first."""
    taken = [0.0] * len(capacities)
    for amount in required:
        if amount == 0:
            return True
        for index, capacity in enumerate(capacities):
            if capacity < amount:
                return False
            if capacity - taken[index] >= amount:
                taken[index] += amount
                break
        else:
            return False
    return True


def test_first_fit_decides_as_a_full_scan_would() -> None:
    draw = random.Random(7)
    for _ in range(3000):
        required = sorted((draw.choice([0, 0.5, 1, 2, 4, 8]) for _ in range(draw.randrange(8))), reverse=True)
        capacities = sorted((draw.choice([0, 1, 2, 3, 4, 8]) for _ in range(draw.randrange(6))), reverse=True)
        assert first_fit(required, capacities) is _first_fit_by_scan(required, capacities), (required, capacities)


def test_largest_capacities_follow_every_change() -> None:
    """The largest entries kept as single entries grow (or shrink) are those a sort of the whole array picks, and
    their kept sum is theirs."""
    draw = random.Random(11)
    for _ in range(300):
        capacity = np.array([draw.choice([-1, 0, 0.1, 0.3, 1, 2, 7, 8]) for _ in range(draw.randrange(1, 9))])
        count = draw.randrange(len(capacity) + 1)
        best = LargestCapacities(capacity.copy(), count)
        for _ in range(20):
            column = draw.randrange(len(capacity))
            amount = draw.choice([0, 0.1, 0.5, 1, 1, 8, -1])
            capacity[column] += amount
            best.add(column, amount)
            expected = sorted(capacity.tolist())[len(capacity) - count :]
            assert best.values() == expected[::-1], (capacity.tolist(), count)
            assert abs(best.total - sum(max(v, 0.0) for v in expected)) < 1e-9


def _labelled(name: str, gpus: int, **labels: str) -> dict[str, Any]:
    raw = node(name, gpus)
    raw["metadata"]["labels"].update(labels)
    return raw


def _pinned(raw: dict[str, Any], pool: str) -> dict[str, Any]:
    raw["spec"]["nodeSelector"] = {"pool": pool}
    return raw


def _preempt(state: ClusterState) -> CycleResult:
    conf = parse_config({"actions": "preempt", "tiers": [{"plugins": PLUGINS}]})
    return run_cycle(take_snapshot(state, conf.scheduler_name, T0), conf, T0).result


def _simulated(result: CycleResult) -> int:
    return sum(n for (_, _, state), n in result.search.scenarios.items() if state == "simulated")


def test_a_pod_pinned_to_one_pool_skips_the_victims_of_other_pools() -> None:
    """Ten train jobs run on pool b, one (the oldest, so the last victim taken) on pool a; a build pod pinned to pool
    a preempts that one. Scenarios whose victims all run on pool b cannot give it a node: they are filtered, not
    simulated."""
    objects: list[tuple[str, dict[str, Any]]] = [
        ("Queue", queue("root")),
        ("Queue", queue("q", parent="root")),
        ("Node", _labelled("a-0", 1, pool="a")),
    ]
    for i in range(10):
        objects += [
            ("Node", _labelled(f"b-{i}", 1, pool="b")),
            ("PodGroup", podgroup(f"b{i}", "q", T0 - 60 * (i + 1), minMember=1)),
            ("Pod", pod(f"b{i}-0", f"b{i}", node_name=f"b-{i}")),
        ]
    objects += [
        ("PodGroup", podgroup("a", "q", T0 - 3600, minMember=1)),
        ("Pod", pod("a-0", "a", node_name="a-0")),
        ("PodGroup", podgroup("urgent", "q", T0, minMember=1, priority_class="build")),
        ("Pod", _pinned(pod("urgent-0", "urgent"), "a")),
    ]
    result = _preempt(cluster(*objects))
    assert [e.pod_key for e in result.evictions] == ["default/a-0"]
    assert result.search.filtered["preempt"] >= 10
    assert _simulated(result) <= 2


def test_victims_that_free_too_few_gpus_on_any_node_are_not_simulated() -> None:
    """A 4-GPU pod: single-GPU jobs on 1-GPU nodes never make room for it; the two 2-GPU jobs on the 4-GPU node
    do. Until both of those are victims, the idle-GPU filter passes over the scenario."""
    objects: list[tuple[str, dict[str, Any]]] = [
        ("Queue", queue("root")),
        ("Queue", queue("q", parent="root")),
        ("Node", node("big", 4)),
    ]
    for i in range(4):
        objects += [
            ("Node", node(f"small-{i}", 1)),
            ("PodGroup", podgroup(f"s{i}", "q", T0 - 600 - i, minMember=1)),
            ("Pod", pod(f"s{i}-0", f"s{i}", node_name=f"small-{i}")),
        ]
    for name in ("x", "y"):
        objects += [
            ("PodGroup", podgroup(name, "q", T0 - 60, minMember=1)),
            ("Pod", pod(f"{name}-0", name, gpus=2, node_name="big")),
        ]
    objects += [
        ("PodGroup", podgroup("wide", "q", T0, minMember=1, priority_class="build")),
        ("Pod", pod("wide-0", "wide", gpus=4)),
    ]
    result = _preempt(cluster(*objects))
    assert sorted(e.pod_key for e in result.evictions) == ["default/x-0", "default/y-0"]
    assert result.search.filtered["preempt"] > 0


def test_a_gang_bound_to_one_rack_waits_for_a_rack_with_room() -> None:
    """A gang of two 1-GPU pods that must share a rack: rack r1 has two 1-GPU nodes, r2 one. Victims on r2 alone
    can never give the gang a rack, so scenarios with only those are filtered."""
    objects: list[tuple[str, dict[str, Any]]] = [
        ("Queue", queue("root")),
        ("Queue", queue("q", parent="root")),
        ("Topology", {"metadata": {"name": "cluster"}, "spec": {"levels": [{"nodeLabel": "rack"}]}}),
        ("Node", _labelled("r1-0", 1, rack="r1")),
        ("Node", _labelled("r1-1", 1, rack="r1")),
        ("Node", _labelled("r2-0", 1, rack="r2")),
    ]
    for name, where, age in (("p", "r2-0", 900), ("m", "r1-0", 60), ("n", "r1-1", 60)):
        objects += [
            ("PodGroup", podgroup(name, "q", T0 - age, minMember=1)),
            ("Pod", pod(f"{name}-0", name, node_name=where)),
        ]
    rack = {"topology": "cluster", "requiredTopologyLevel": "rack"}
    objects += [
        ("PodGroup", podgroup("gang", "q", T0, minMember=2, priority_class="build", topologyConstraint=rack)),
        ("Pod", pod("gang-0", "gang")),
        ("Pod", pod("gang-1", "gang")),
    ]
    result = _preempt(cluster(*objects))
    assert sorted(e.pod_key for e in result.evictions) == ["default/m-0", "default/n-0"]
    assert result.search.filtered["preempt"] > 0
