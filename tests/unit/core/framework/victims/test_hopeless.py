"""Victim searches proven hopeless without a simulation, and what change of the cluster makes them be searched again.

The cluster: node n0 (4 GPUs) full; queue qa (quota 4) runs 2 single-GPU jobs and waits for a gang of 2, queue qb
(quota 2) runs 2: qb holds no more than it deserves, so reclaim's fair share refuses any eviction from it, and there
is no room for the gang's first pod even if qb's pods were moved: no reclaim scenario can be solved.
"""

from collections.abc import Callable
from typing import Any

import pytest
from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.config import parse_config
from kai.core.cycle import close_session, open_session, run_cycle
from kai.core.framework.decisions import CycleResult
from kai.core.framework.victims.hopeless import Yield, strictest
from kai.core.registry import ACTIONS
from kai.core.state.cluster_state import ClusterState
from kai.core.state.snapshot import take_snapshot

CONFIG = parse_config({"actions": "allocate, reclaim"})
Objects = list[tuple[str, dict[str, Any]]]


def _running(name: str, queue_name: str, node_name: str = "n0") -> Objects:
    return [
        ("PodGroup", podgroup(name, queue_name, T0 - 600, minMember=1)),
        ("Pod", pod(f"{name}-0", name, node_name=node_name)),
    ]


def _objects(qb_quota: float = 2, gang: int = 2, qa_quota: float = 4) -> Objects:
    objects: Objects = [("Queue", queue("qa", gpu_quota=qa_quota)), ("Queue", queue("qb", gpu_quota=qb_quota))]
    objects.append(("Node", node("n0", 4)))
    for name in ("a0", "a1"):
        objects += _running(name, "qa")
    for name in ("b0", "b1"):
        objects += _running(name, "qb")
    objects.append(("PodGroup", podgroup("gang", "qa", T0, minMember=gang)))
    return objects + [("Pod", pod(f"gang-{i}", "gang")) for i in range(gang)]


def _cycle(state: ClusterState, proofs: bool = True) -> CycleResult:
    """One cycle; without ``proofs``, reclaim simulates every scenario (the slow twin)."""
    snapshot = take_snapshot(state, CONFIG.scheduler_name, T0)
    if proofs:
        return run_cycle(snapshot, CONFIG, T0).result
    ssn = open_session(snapshot, CONFIG, T0)
    ssn.reclaim_yield_fns.clear()
    for name in CONFIG.actions:
        ACTIONS[name].execute(ssn)
    close_session(ssn)
    return ssn.result


def _decided(result: CycleResult) -> dict[str, Any]:
    return {
        "binds": [(b.pod_key, b.node) for b in result.binds],
        "evictions": [(e.pod_key, e.message) for e in result.evictions],
        "pipelined": [(p.pod_key, p.node) for p in result.pipelined],
        "unschedulable": {key: (u.reason, u.message, u.detailed_message) for key, u in result.unschedulable.items()},
        "pod_errors": result.pod_errors,
    }


def test_a_gang_no_eviction_could_help_is_not_searched() -> None:
    proven = _cycle(cluster(*_objects()))
    assert proven.search.jobs == {("reclaim", "proven_hopeless", False): 1}
    assert not proven.search.scenarios
    searched = _cycle(cluster(*_objects()), proofs=False)
    assert searched.search.jobs == {("reclaim", "generators_exhausted", False): 1}
    assert searched.search.scenarios[("reclaim", "NodeLocalGreedy", "validator_rejected")] > 0
    assert _decided(proven) == _decided(searched)


def _quota_lowered(state: ClusterState) -> None:
    """qb now holds more than it deserves: its pods may be reclaimed."""
    for kind, obj in _objects(qb_quota=1):
        if kind == "Queue" and obj["metadata"]["name"] == "qb":
            state.apply(kind, obj)


def _node_added(state: ClusterState) -> None:
    """A node with one idle GPU: room for the gang's first pod, were qb's pods moved."""
    state.apply("Node", node("n1", 1))


@pytest.mark.parametrize("change", [_quota_lowered, _node_added], ids=["a victim queue over its quota", "a node added"])
def test_a_change_of_the_cluster_makes_it_be_searched_again(change: Callable[[ClusterState], None]) -> None:
    state = cluster(*_objects())
    assert _cycle(state).search.jobs == {("reclaim", "proven_hopeless", False): 1}
    change(state)
    again = _cycle(state)
    assert again.search.jobs == {("reclaim", "generators_exhausted", False): 1}
    assert again.search.scenarios[("reclaim", "NodeLocalGreedy", "simulated")] > 0
    assert _decided(again) == _decided(_cycle(state, proofs=False))


def test_once_the_victim_queue_is_over_its_quota_reclaim_takes_from_it() -> None:
    state = cluster(*_objects(gang=1, qa_quota=3))
    assert _cycle(state).search.jobs == {("reclaim", "proven_hopeless", False): 1}
    _quota_lowered(state)
    result = _cycle(state)
    assert [e.pod_key for e in result.evictions] == ["default/b1-0"]
    assert [p.pod_key for p in result.pipelined] == ["default/gang-0"]


def test_with_no_victim_to_take_nothing_is_searched() -> None:
    """One of qb's pods ended: qb is below its quota, so no job of it may be reclaimed at all."""
    state = cluster(*_objects())
    state.apply("Pod", pod("b1-0", "b1", node_name="n0"), deleted=True)
    assert _cycle(state).search.jobs == {("reclaim", "proven_hopeless", False): 1}


def test_a_victim_that_waits_is_searched_as_before() -> None:
    """b1 also waits for a second pod: a simulation that fails to re-place it leaves fit errors the cycle reports,
    so the search is simulated, and decides as without proofs."""
    objects = [*_objects(), ("Pod", pod("b1-1", "b1"))]
    searched = _cycle(cluster(*objects))
    assert ("reclaim", "proven_hopeless", False) not in searched.search.jobs
    assert searched.search.scenarios[("reclaim", "NodeLocalGreedy", "simulated")] > 0
    assert _decided(searched) == _decided(_cycle(cluster(*objects), proofs=False))


def test_the_strictest_answer_of_every_validator_holds() -> None:
    def moves(_job: Any, queue: str) -> Yield:
        return Yield.MOVES_ONLY if queue == "qb" else Yield.ANY

    def nothing(_job: Any, queue: str) -> Yield:
        return Yield.NOTHING if queue == "qc" else Yield.ANY

    combined = strictest([moves, nothing])
    assert combined is not None
    assert [combined(None, q) for q in ("qa", "qb", "qc")] == [Yield.ANY, Yield.MOVES_ONLY, Yield.NOTHING]
    assert strictest([]) is None
