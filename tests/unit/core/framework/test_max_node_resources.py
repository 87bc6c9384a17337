"""A pod larger than every node: allocate says so in KAI's words, and no action evicts anything for it."""

import pytest
from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.config import parse_config
from kai.core.cycle import run_cycle
from kai.core.state.cluster_state import ClusterState
from kai.core.state.snapshot import take_snapshot

REQUIRES = "The pod default/big-0 requires GPU: 8, CPU: 1 (cores), memory: 0 (GB), pods: 1. "
TOPPED = "Max GPU resources available in a single node in the default node-pool is topped at 4"


def _state(priority_class: str = "build") -> ClusterState:
    """Two 4-GPU nodes full of a train job; another job wants 8 GPUs in one pod."""
    return cluster(
        ("Queue", queue("root")),
        ("Queue", queue("q", parent="root")),
        ("Node", node("n0", 4)),
        ("Node", node("n1", 4)),
        ("PodGroup", podgroup("small", "q", T0 - 60, minMember=2)),
        ("Pod", pod("small-0", "small", gpus=4, node_name="n0")),
        ("Pod", pod("small-1", "small", gpus=4, node_name="n1")),
        ("PodGroup", podgroup("big", "q", T0, minMember=1, priority_class=priority_class)),
        ("Pod", pod("big-0", "big", gpus=8)),
    )


def test_allocate_reports_the_largest_node() -> None:
    config = parse_config({"actions": "allocate"})
    result = run_cycle(take_snapshot(_state(), config.scheduler_name, T0), config, T0).result
    assert result.pod_errors["default/big-0"] == (
        f"Scheduling conditions were not met for pod default/big-0:\nMaxNodePoolResources: {REQUIRES}{TOPPED}.\n"
    )


@pytest.mark.parametrize(("action", "priority_class"), [("preempt", "build"), ("consolidation", "train")])
def test_no_victims_are_searched_for_it(action: str, priority_class: str) -> None:
    """Moving or evicting the running job could never make room; KAI v0.17 skips the search and says why."""
    config = parse_config({"actions": action})
    result = run_cycle(take_snapshot(_state(priority_class), config.scheduler_name, T0), config, T0).result
    assert result.evictions == [] and result.search.jobs == {}
    assert result.unschedulable["default/big"].detailed_message == (
        f"\nPodSchedulingErrors.\nResources were not found for pod default/big-0 due to: {REQUIRES}{TOPPED}."
    )


def test_other_resources_name_the_pool_without_amounts() -> None:
    """For resources other than GPU, CPU and memory, KAI names the resource but shows no amount."""
    state = _state()
    state.apply("PodGroup", podgroup("nic", "q", T0, minMember=1))
    state.apply(
        "Pod",
        {
            "metadata": {"name": "nic-0", "namespace": "default", "annotations": {"pod-group-name": "nic"}},
            "spec": {
                "schedulerName": "kai-scheduler",
                "containers": [{"name": "c", "resources": {"requests": {"example.com/nic": "1"}}}],
            },
        },
    )
    config = parse_config({"actions": "allocate"})
    result = run_cycle(take_snapshot(state, config.scheduler_name, T0), config, T0).result
    assert result.pod_errors["default/nic-0"].endswith(
        "requires GPU: 0, CPU: 0 (cores), memory: 0 (GB), pods: 1, example.com/nic: 1. "
        "No node in the default node-pool has example.com/nic resources.\n"
    )
