"""Victim search at scale, on KAI v0.17's reclaim benchmark topologies
(pkg/scheduler/actions/integration_tests/reclaim/reclaim_benchmark_test.go). Prints one line per case; not a test.

- ``large-jobs-<n>`` (BenchmarkReclaimLargeJobs): n nodes of 8 GPUs full of n×8 single-GPU jobs of queue-0 (no
  deserved GPUs); queue-1 (deserved: every GPU) has a pending job of n/2 tasks of 8 GPUs. The reclaim action alone;
  it must pipeline every task and evict n/2×8 jobs.
- ``many-single-<n>`` (BenchmarkReclaimManySingleGPUJobsFullCycle): the same nodes and running jobs, and n×8
  pending single-GPU jobs of the other queue; the whole default cycle (allocate, consolidation, reclaim, preempt,
  stalegangeviction), which must reclaim every GPU.

Two more of kai's own, for the other evicting actions at the same scale (whole default cycle):

- ``preempt-single-<n>``: as many-single, but the pending jobs are of the running jobs' queue, at a higher
  priority: preempt must take every GPU.
- ``consolidate-<n>``: every node half full of single-GPU jobs (node after node, so the first victims share a node)
  and n/2 pending jobs of 8 GPUs, each of which needs 4 pods moved off a node (2n moves): consolidation moves
  them while its few candidates (``maxNumberConsolidationPreemptees``) allow, reclaim the rest.

bench <case> nodes=<n> seconds=<s> cpu_s=<s> evictions=<n> pipelined=<n> expected_evictions=<n> simulated=<n>
filtered=<n> rss_mb=<mb>

Wall times on a shared machine depend on its load; the CPU seconds do much less. The search budgets run on the
wall clock, as in the scheduler; ``--frozen-clock`` keeps them from deciding anything, and ``--decisions FILE``
writes what each case decided, so that two versions can be compared decision by decision.
"""

import argparse
import gc
import json
import resource
import time
from pathlib import Path
from typing import Any

from kai.core.config import parse_config
from kai.core.cycle import run_cycle
from kai.core.framework.decisions import CycleResult
from kai.core.model.meta import format_time
from kai.core.state.cluster_state import ClusterState
from kai.core.state.snapshot import take_snapshot

SIZES = (10, 50, 100, 200, 500, 1000)
GPUS_PER_NODE = 8
RECLAIM = parse_config({"actions": "reclaim"})
FULL_CYCLE = parse_config({})
NOW = 1_767_225_600.0
Objects = list[tuple[str, dict[str, Any]]]


def _queue(name: str, parent: str, deserved: float) -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    gpu = {"quota": deserved, "limit": -1, "overQuotaWeight": 0}
    spec: dict[str, Any] = {"resources": {"gpu": gpu, "cpu": unlimited, "memory": unlimited}}
    if parent:
        spec["parentQueue"] = parent
    return {"metadata": {"name": name, "creationTimestamp": "2025-01-01T00:00:00Z"}, "spec": spec}


def _job(
    name: str, queue: str, gpus: int, nodes: list[str | None], age_minutes: int, priority: str = "train"
) -> Objects:
    """A gang of one pod per entry of ``nodes`` (running there, or pending for None), each with ``gpus`` GPUs; as in
    KAI's fakes, a job listed earlier is older."""
    created = format_time(NOW - 60 * age_minutes)
    meta = {"name": name, "namespace": "bench", "creationTimestamp": created, "uid": f"uid-{name}"}
    spec = {"queue": queue, "priorityClassName": priority, "minMember": len(nodes)}
    objects: Objects = [("PodGroup", {"metadata": meta, "spec": spec})]
    for i, node in enumerate(nodes):
        limits = {"nvidia.com/gpu": str(gpus)}
        spec: dict[str, Any] = {
            "schedulerName": "kai-scheduler",
            "priorityClassName": priority,
            "containers": [{"name": "main", "resources": {"requests": limits, "limits": limits}}],
        }
        if node:
            spec["nodeName"] = node
        pod = {
            "metadata": {"name": f"{name}-{i}", "namespace": "bench", "annotations": {"pod-group-name": name}},
            "spec": spec,
            "status": {"phase": "Running" if node else "Pending"},
        }
        objects.append(("Pod", pod))
    return objects


def build(nodes: int, pending: str) -> Objects:
    """KAI's topology: ``pending`` is ``large`` (one job of nodes/2 8-GPU tasks) or ``single`` (nodes×8 jobs); kai's:
    ``preempt`` (as single, in the running jobs' queue, at a higher priority) or ``consolidate``."""
    gpus = nodes * GPUS_PER_NODE
    names = [f"node{i}" for i in range(nodes)]
    objects: Objects = [
        ("PriorityClass", {"metadata": {"name": "train"}, "value": 50}),
        ("PriorityClass", {"metadata": {"name": "urgent"}, "value": 80}),
        ("Queue", _queue("default", "", -1)),
        ("Queue", _queue("queue-0", "default", gpus if pending == "preempt" else 0)),
        ("Queue", _queue("queue-1", "default", gpus)),
    ]
    for name in names:
        allocatable = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": str(GPUS_PER_NODE), "pods": "110"}
        node = {"metadata": {"name": name, "labels": {"nvidia.com/gpu.count": str(GPUS_PER_NODE)}}}
        objects.append(("Node", {**node, "status": {"allocatable": allocatable}}))
    running = gpus // 2 if pending == "consolidate" else gpus
    jobs = running + (1 if pending == "large" else gpus)
    for i in range(running):  # round robin; filling node after node to consolidate (the newest, first to go, together)
        node = names[i // (GPUS_PER_NODE // 2)] if pending == "consolidate" else names[i % nodes]
        objects += _job(f"running-job-{i}", "queue-0", 1, [node], jobs - i)
    if pending == "large":
        objects += _job("very-large-job", "queue-1", GPUS_PER_NODE, [None] * (nodes // 2), 1)
    elif pending == "consolidate":
        for i in range(nodes // 2):
            objects += _job(f"pending-job-{i}", "queue-1", GPUS_PER_NODE, [None], nodes - i)
    else:
        queue, priority = ("queue-0", "urgent") if pending == "preempt" else ("queue-1", "train")
        for i in range(gpus):
            objects += _job(f"pending-job-{i}", queue, 1, [None], gpus - i, priority)
    return objects


CASES = {
    "large-jobs": ("large", False, lambda n: n // 2 * GPUS_PER_NODE),
    "many-single": ("single", True, lambda n: n * GPUS_PER_NODE),
    "preempt-single": ("preempt", True, lambda n: n * GPUS_PER_NODE),
    "consolidate": ("consolidate", True, lambda n: n // 2 * GPUS_PER_NODE // 2),
}
"""Case → (topology, whole cycle, evictions it must make)."""


def run(objects: Objects, full_cycle: bool, frozen_clock: bool = False) -> tuple[float, float, CycleResult]:
    state = ClusterState()
    for kind, obj in objects:
        error = state.apply(kind, obj)
        assert error is None, error
    config = FULL_CYCLE if full_cycle else RECLAIM
    gc.collect()
    gc.freeze()
    start, cpu = time.perf_counter(), time.process_time()
    clock = (lambda: 0.0) if frozen_clock else time.monotonic
    session = run_cycle(take_snapshot(state, config.scheduler_name), config, NOW, clock)
    seconds, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    gc.unfreeze()
    return seconds, cpu_s, session.result


def decisions(case: str, result: CycleResult) -> dict[str, Any]:
    """What a cycle decided, to compare two runs (or two versions) decision by decision."""
    return {
        "case": case,
        "binds": [(b.pod_key, b.node, b.gpu_groups) for b in result.binds],
        "evictions": [(e.pod_key, e.node, e.action, e.message, e.evictor) for e in result.evictions],
        "pipelined": [(p.pod_key, p.node, p.message) for p in result.pipelined],
        "unschedulable": sorted(
            (key, u.reason, u.message, u.detailed_message, repr(u.reasons)) for key, u in result.unschedulable.items()
        ),
        "pod_errors": sorted(result.pod_errors.items()),
        "scenarios": sorted((str(key), n) for key, n in result.search.scenarios.items()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES), help="node counts (default: KAI's)")
    parser.add_argument("--cases", nargs="*", choices=list(CASES), default=list(CASES)[:2], help="which topologies")
    parser.add_argument("--decisions", type=Path, help="write each case's decisions to this file (JSON lines)")
    parser.add_argument(
        "--frozen-clock", action="store_true", help="search budgets never run out: decisions independent of speed"
    )
    args = parser.parse_args()
    out = args.decisions.open("w") if args.decisions else None
    for case in args.cases:
        topology, full_cycle, expected = CASES[case]
        for nodes in args.sizes:
            seconds, cpu_s, result = run(build(nodes, topology), full_cycle, args.frozen_clock)
            simulated = sum(n for (_, _, state), n in result.search.scenarios.items() if state == "simulated")
            rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(
                f"bench {case}-{nodes} nodes={nodes} seconds={seconds:.3f} cpu_s={cpu_s:.3f} "
                f"evictions={len(result.evictions)} pipelined={len(result.pipelined)} "
                f"expected_evictions={expected(nodes)} simulated={simulated} "
                f"filtered={sum(result.search.filtered.values())} rss_mb={rss_mb:.0f}",
                flush=True,
            )
            if out is not None:
                out.write(json.dumps(decisions(f"{case}-{nodes}", result)) + "\n")
    if out is not None:
        out.close()


if __name__ == "__main__":
    main()
