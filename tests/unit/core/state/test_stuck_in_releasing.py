"""StuckInReleasing: a running pod terminating for longer than stuckInReleasingThreshold still holds its node, but
nothing is pipelined onto its resources and its podgroup is not a victim."""

import pytest
from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.config import parse_config
from kai.core.cycle import run_cycle
from kai.core.state.cluster_state import ClusterState
from kai.core.state.pod_status import PodStatus
from kai.core.state.resource_index import GPU_ROW
from kai.core.state.snapshot import take_snapshot

DELETED = T0 - 600


def _state() -> ClusterState:
    return cluster(
        ("Queue", queue("root")),
        ("Queue", queue("q", parent="root")),
        ("Node", node("n0", 1)),
        ("PodGroup", podgroup("terminating", "q", T0 - 3600, minMember=1)),
        ("Pod", pod("terminating-0", "terminating", node_name="n0", deleted=DELETED)),
        ("PodGroup", podgroup("pending", "q", T0, minMember=1, priority_class="build")),
        ("Pod", pod("pending-0", "pending")),
    )


@pytest.mark.parametrize(
    ("threshold", "now", "status"),
    [
        ("2m", DELETED + 119, PodStatus.RELEASING),
        ("2m", DELETED + 120, PodStatus.RELEASING),  # KAI: stuck only once strictly longer than the threshold
        ("2m", DELETED + 121, PodStatus.STUCK_IN_RELEASING),
        ("15m", T0, PodStatus.RELEASING),
        ("0s", DELETED + 121, PodStatus.STUCK_IN_RELEASING),  # zero falls back to KAI's default of 2m
    ],
)
def test_status_depends_on_how_long_it_has_been_terminating(threshold: str, now: float, status: PodStatus) -> None:
    config = parse_config({"stuckInReleasingThreshold": threshold})
    snapshot = take_snapshot(_state(), config.scheduler_name, now, config.stuck_in_releasing_s)
    assert snapshot.jobs["default/terminating"].tasks["default/terminating-0"].status is status


def test_stuck_pod_holds_its_node_but_frees_nothing() -> None:
    snapshot = take_snapshot(_state(), "kai-scheduler", T0)
    assert snapshot.nodes.idle[GPU_ROW, 0] == 0.0
    assert snapshot.nodes.releasing[GPU_ROW, 0] == 0.0


@pytest.mark.parametrize(("now", "pipelined"), [(DELETED + 60, True), (T0, False)])
def test_nothing_waits_for_a_stuck_pod(now: float, pipelined: bool) -> None:
    """A merely releasing pod lets the pending pod be pipelined onto its GPU; a stuck one does not, and the stuck
    pod's podgroup is not preempted either (it has no running pod left to take)."""
    config = parse_config({"actions": "allocate, preempt"})
    result = run_cycle(take_snapshot(_state(), config.scheduler_name, now), config, now).result
    assert [p.pod_key for p in result.pipelined] == (["default/pending-0"] if pipelined else [])
    assert result.evictions == []
