"""Hypothesis-generated clusters: whatever the cluster, a cycle never breaks KAI's invariants (docs/architecture.md §6).

- no node gets more CPU, memory, GPUs or pods than it has: what is bound or running fits its idle resources, and
  what waits for releasing pods (pipelined) fits what those pods free;
- a gang holds at least minMember pods or none (pods being evicted no longer count);
- a queue never goes over its GPU limit, at any level (counting what it holds or waits for, not what it releases);
- a non-preemptible job never takes a queue past its deserved GPUs.
"""

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kai.core.cycle import run_cycle
from kai.core.framework.config import SchedulerConfig
from kai.core.state.cluster_state import ClusterState
from kai.core.state.pod_status import ACTIVE_ALLOCATED
from kai.core.state.snapshot import take_snapshot

pytestmark = pytest.mark.slow  # run by `make test` (`make properties`), not by `make unit`

CONFIG = SchedulerConfig()


def _queue(name: str, parent: str, quota: int, limit: int) -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec: dict[str, Any] = {
        "resources": {
            "gpu": {"quota": quota, "limit": limit, "overQuotaWeight": 1},
            "cpu": unlimited,
            "memory": unlimited,
        }
    }
    if parent:
        spec["parentQueue"] = parent
    return {"metadata": {"name": name}, "spec": spec}


@st.composite
def clusters(draw: st.DrawFn) -> ClusterState:
    state = ClusterState()
    for name, value in (("train", 50), ("inference", 125)):
        state.apply("PriorityClass", {"metadata": {"name": name}, "value": value})
    state.apply("Queue", _queue("dept", "", draw(st.integers(0, 16)), draw(st.sampled_from([-1, 8, 16, 32]))))
    for team in ("a", "b"):
        quota = draw(st.integers(0, 8))
        state.apply("Queue", _queue(team, "dept", quota, draw(st.sampled_from([-1, quota, quota + 4]))))
    for n in range(draw(st.integers(1, 5))):
        gpus = draw(st.sampled_from([0, 2, 4, 8]))
        state.apply(
            "Node",
            {
                "metadata": {"name": f"node-{n}"},
                "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": str(gpus), "pods": "8"}},
            },
        )
    for j in range(draw(st.integers(1, 8))):
        queue = draw(st.sampled_from(["a", "b"]))
        members = draw(st.integers(1, 4))
        state.apply(
            "PodGroup",
            {
                "metadata": {"name": f"job-{j}", "namespace": "ns"},
                "spec": {
                    "queue": queue,
                    "minMember": draw(st.integers(1, members)),
                    "priorityClassName": draw(st.sampled_from(["train", "inference"])),
                },
            },
        )
        gpus = draw(st.sampled_from([0, 1, 2, 4]))
        for i in range(members):
            state.apply(
                "Pod",
                {
                    "metadata": {
                        "name": f"job-{j}-{i}",
                        "namespace": "ns",
                        "annotations": {"pod-group-name": f"job-{j}"},
                    },
                    "spec": {
                        "schedulerName": "kai-scheduler",
                        "containers": [
                            {
                                "name": "c",
                                "resources": {"requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": str(gpus)}},
                            }
                        ],
                    },
                    "status": {"phase": "Pending"},
                },
            )
    return state


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_a_cycle_keeps_the_invariants(state: ClusterState) -> None:
    session = run_cycle(take_snapshot(state, CONFIG.scheduler_name), CONFIG, 0.0)
    nodes = session.nodes
    assert (nodes.idle >= -1e-9).all(), "a node got more than it has"
    assert (nodes.idle + nodes.releasing >= -1e-9).all(), "pipelined pods wait for more than is being freed"
    placed_gpus: dict[str, float] = {}
    for job in session.jobs.values():
        placed = [t for t in job.tasks.values() if t.status in ACTIVE_ALLOCATED]
        assert not placed or len(placed) >= job.pod_sets["default"].min_available, f"{job.key} placed partially"
        gpus = sum(t.request.gpus for t in placed)
        for queue in (job.queue, "dept"):
            placed_gpus[queue] = placed_gpus.get(queue, 0.0) + gpus
        if not job.preemptible and gpus:
            deserved = state.queues[job.queue].gpu.quota
            non_preemptible = sum(
                t.request.gpus
                for other in session.jobs.values()
                if other.queue == job.queue and not other.preemptible
                for t in other.tasks.values()
                if t.status in ACTIVE_ALLOCATED
            )
            assert deserved == -1 or non_preemptible <= deserved, f"{job.queue} non-preemptible over quota"
    for name, gpus in placed_gpus.items():
        limit = state.queues[name].gpu.limit
        assert limit == -1 or gpus <= limit, f"queue {name} over its GPU limit"
