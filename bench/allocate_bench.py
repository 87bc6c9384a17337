"""Allocate-cycle benchmark on KAI's benchmark topologies (pkg/scheduler/actions/benchmark_test.go) and one large
cluster. Prints one line per case; not a test.

bench <case> nodes=<n> pods=<m> seconds=<s> cpu_s=<s> pods_per_s=<r> rss_mb=<mb>

``--podaffinity`` runs the operator's ``podaffinity`` plugin besides the default ones, with every pod preferring
(weight 10) not to share a node with the pods of its own queue, so each pod's score reads the placed pods' labels
and terms (its cost shows against the same run without the flag, where the plugin is not configured).

With ``--full-cycle`` it runs what the scheduler does every period instead: the scheduler loop's ``run_once`` over
the in-memory cluster (snapshot, every default action and plugin, writing the decisions back, metrics); ``--usage``
does the same with time-based fair share on (the builtin usage store read, fed and saved to its ConfigMap):

bench <case> full_cycle_s=<s> cpu_s=<s> binds=<n> rss_mb=<mb>

Wall times on a shared machine depend on its load; the CPU seconds do much less.
"""

import argparse
import gc
import resource
import time
from typing import Any

from prometheus_client import CollectorRegistry

from kai.cluster.memory import MemoryCluster
from kai.components.scheduler.loop import SchedulerLoop
from kai.components.shared.metrics import SchedulerMetrics
from kai.core.config import parse_config
from kai.core.cycle import run_cycle
from kai.core.framework.config import DEFAULT_PLUGINS, SchedulerConfig
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
AFFINITY_CONFIG = parse_config(
    {
        "actions": "allocate",
        "tiers": [{"plugins": [{"name": n} for n, _ in DEFAULT_PLUGINS] + [{"name": "podaffinity"}]}],
    }
)
HOST = "kubernetes.io/hostname"
FULL_CONFIG = parse_config({})
USAGE_CONFIG = parse_config({"usageDBConfig": {"clientType": "builtin"}})


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


def build(nodes: int, jobs: int, affinity: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """The benchmark cluster as (kind, object) pairs: two departments of two queues, 8-GPU nodes, 1-GPU jobs."""
    objects: list[tuple[str, dict[str, Any]]] = []
    total = nodes * 8
    objects.append(("PriorityClass", {"metadata": {"name": "train"}, "value": 50}))
    for dept in ("dept-a", "dept-b"):
        objects.append(("Queue", _queue(dept, "", total / 2)))
    for i in range(4):
        objects.append(("Queue", _queue(f"queue-{i}", "dept-a" if i < 2 else "dept-b", total / 4)))
    for n in range(nodes):
        objects.append(
            (
                "Node",
                {
                    "metadata": {
                        "name": f"node-{n:05d}",
                        "labels": {"nvidia.com/gpu.count": "8", HOST: f"node-{n:05d}"},
                    },
                    "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"}},
                },
            )
        )
    for j in range(jobs):
        queue = f"queue-{j % 4}"
        objects.append(_podgroup(j, queue))
        objects.append(_pod(j, queue, affinity))
    return objects


def _podgroup(j: int, queue: str) -> tuple[str, dict[str, Any]]:
    meta = {
        "name": f"job-{j}",
        "namespace": "bench",
        "creationTimestamp": "2025-01-01T00:00:00Z",
        "uid": f"uid-{j:06d}",
    }
    return ("PodGroup", {"metadata": meta, "spec": {"queue": queue, "priorityClassName": "train", "minMember": 1}})


def _pod(j: int, queue: str, affinity: bool) -> tuple[str, dict[str, Any]]:
    requests = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}
    pod: dict[str, Any] = {
        "metadata": {
            "name": f"job-{j}-0",
            "namespace": "bench",
            "annotations": {"pod-group-name": f"job-{j}"},
            "labels": {"kai.scheduler/queue": queue},
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "containers": [{"name": "main", "resources": {"requests": requests}}],
        },
        "status": {"phase": "Pending"},
    }
    if affinity:
        term = {"labelSelector": {"matchLabels": {"kai.scheduler/queue": queue}}, "topologyKey": HOST}
        preferred = [{"weight": 10, "podAffinityTerm": term}]
        pod["spec"]["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    return ("Pod", pod)


def _allocate(objects: list[tuple[str, dict[str, Any]]], config: SchedulerConfig) -> tuple[float, float, int]:
    state = ClusterState()
    for kind, obj in objects:
        state.apply(kind, obj)
    gc.collect()
    gc.freeze()
    start, cpu = time.perf_counter(), time.process_time()
    session = run_cycle(take_snapshot(state, config.scheduler_name), config, 0.0)
    seconds, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    gc.unfreeze()
    return seconds, cpu_s, len(session.result.binds)


def _full_cycle(objects: list[tuple[str, dict[str, Any]]], usage: bool) -> tuple[float, float, int]:
    cluster = MemoryCluster()
    for kind, obj in objects:
        cluster.create(kind, obj)
    config = USAGE_CONFIG if usage else FULL_CONFIG
    loop = SchedulerLoop(cluster, config, SchedulerMetrics(CollectorRegistry()), clock=lambda: 1_767_225_600.0)
    gc.collect()
    gc.freeze()
    start, cpu = time.perf_counter(), time.process_time()
    session = loop.run_once()
    seconds, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    gc.unfreeze()
    return seconds, cpu_s, len(session.result.binds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help=f"cases to run (default: all of {', '.join(c for c, _, _ in CASES)})")
    parser.add_argument("--full-cycle", action="store_true", help="time the scheduler loop's whole cycle")
    parser.add_argument("--usage", action="store_true", help="full cycle with time-based fair share (builtin store)")
    parser.add_argument("--podaffinity", action="store_true", help="pods that prefer not to share a node, scored")
    args = parser.parse_args()
    for case, nodes, jobs in CASES:
        if args.cases and case not in args.cases:
            continue
        objects = build(nodes, jobs, args.podaffinity)
        if args.full_cycle or args.usage:
            seconds, cpu_s, bound = _full_cycle(objects, args.usage)
            rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(
                f"bench {case} full_cycle_s={seconds:.3f} cpu_s={cpu_s:.3f} binds={bound} rss_mb={rss_mb:.0f}",
                flush=True,
            )
            continue
        seconds, cpu_s, bound = _allocate(objects, AFFINITY_CONFIG if args.podaffinity else CONFIG)
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"bench {case} nodes={nodes} pods={jobs} seconds={seconds:.3f} cpu_s={cpu_s:.3f} "
            f"pods_per_s={bound / seconds:.0f} rss_mb={rss_mb:.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
