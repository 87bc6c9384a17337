"""Allocate-cycle benchmark on KAI's benchmark topologies (pkg/scheduler/actions/benchmark_test.go) and one large
cluster. Prints one line per case; not a test.

bench <case> nodes=<n> pods=<m> seconds=<s> pods_per_s=<r> rss_mb=<mb>
"""

import gc
import resource
import sys
import time
from typing import Any

from kai.core.cycle import run_cycle
from kai.core.framework.config import parse_config
from kai.core.state.cluster_state import ClusterState
from kai.core.state.snapshot import take_snapshot

CASES = [
    ("small", 10, 50),
    ("medium", 50, 200),
    ("large", 100, 500),
    ("xlarge", 1000, 5000),
    ("huge", 5000, 50000),
]
CONFIG = parse_config({"actions": "allocate"})


def _queue(name: str, parent: str, quota: float) -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec: dict[str, Any] = {
        "resources": {
            "gpu": {"quota": quota, "limit": -1, "overQuotaWeight": 1},
            "cpu": unlimited,
            "memory": unlimited,
        }
    }
    if parent:
        spec["parentQueue"] = parent
    return {"metadata": {"name": name, "creationTimestamp": "2025-01-01T00:00:00Z"}, "spec": spec}


def build(nodes: int, jobs: int) -> ClusterState:
    state = ClusterState()
    total = nodes * 8
    state.apply("PriorityClass", {"metadata": {"name": "train"}, "value": 50})
    for dept in ("dept-a", "dept-b"):
        state.apply("Queue", _queue(dept, "", total / 2))
    for i in range(4):
        state.apply("Queue", _queue(f"queue-{i}", "dept-a" if i < 2 else "dept-b", total / 4))
    for n in range(nodes):
        state.apply(
            "Node",
            {
                "metadata": {"name": f"node-{n:05d}", "labels": {"nvidia.com/gpu.count": "8"}},
                "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"}},
            },
        )
    for j in range(jobs):
        queue = f"queue-{j % 4}"
        state.apply(
            "PodGroup",
            {
                "metadata": {
                    "name": f"job-{j}",
                    "namespace": "bench",
                    "creationTimestamp": "2025-01-01T00:00:00Z",
                    "uid": f"uid-{j:06d}",
                },
                "spec": {"queue": queue, "priorityClassName": "train", "minMember": 1},
            },
        )
        state.apply(
            "Pod",
            {
                "metadata": {
                    "name": f"job-{j}-0",
                    "namespace": "bench",
                    "annotations": {"pod-group-name": f"job-{j}"},
                    "labels": {"kai.scheduler/queue": queue},
                },
                "spec": {
                    "schedulerName": "kai-scheduler",
                    "containers": [
                        {
                            "name": "main",
                            "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}},
                        }
                    ],
                },
                "status": {"phase": "Pending"},
            },
        )
    return state


def main(selected: list[str]) -> None:
    for case, nodes, jobs in CASES:
        if selected and case not in selected:
            continue
        state = build(nodes, jobs)
        gc.collect()
        gc.freeze()
        start = time.perf_counter()
        session = run_cycle(take_snapshot(state, CONFIG.scheduler_name), CONFIG, 0.0)
        seconds = time.perf_counter() - start
        bound = len(session.result.binds)
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"bench {case} nodes={nodes} pods={jobs} seconds={seconds:.3f} pods_per_s={bound / seconds:.0f} "
            f"rss_mb={rss_mb:.0f}",
            flush=True,
        )
        gc.unfreeze()


if __name__ == "__main__":
    main(sys.argv[1:])
