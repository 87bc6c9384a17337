"""The scheduler's whole cycle at KAI's largest field scale (KAI issue #315: 4,000 nodes / 140,000 pods, 2–3 s
cycles, 88% of it the snapshot; #1725: scheduler memory growing to 3 GiB). Prints figures; not a test.

The cluster: ``--nodes`` 8-GPU nodes in 4 zones; 5 departments of 10 queues sharing the GPUs; running, 3,000
8-pod training gangs, 7,000 single-GPU inference pods and CPU-only pods up to ``--pods``, leaving 1,000 GPUs idle;
pending, ``--pending`` pods: 2,000 single-GPU jobs (1,000 fit) and 8-pod gangs that do not fit. The scheduler loop's
``run_once`` (snapshot, every default action and plugin, writing the decisions back, metrics) runs ``--cycles``
times over the in-memory cluster; the first cycle places what fits, the rest see a full cluster with work waiting,
as a busy field cluster does.

bench field-build nodes=<n> pods=<m> pending=<k> seconds=<s to load the cluster state> rss_mb=<mb>
bench field-cycle-<n> seconds=<s> cpu_s=<s> snapshot_s=<s> snapshot_cpu_s=<s> snapshot_share=<%> binds=<n> ...
    <action>_jobs=<pending jobs searched for> <action>_simulated=<scenarios> [budget_exhausted=<actions>]
bench field-steady cycles=<n> p50_s=<s> max_s=<s> cpu_p50_s=<s> snapshot_p50_s=<s> snapshot_share=<%> rss_first_mb=<mb>
    rss_last_mb=<mb>
bench field-phases open_ms=<median ms> <action>_ms=<median ms>... close_ms=<ms> write_ms=<ms>

``--profile FILE`` writes a cProfile of one cycle, ``--profile-cycle`` (by default the first steady one; it is left
out of the steady figures); read it with ``python -m pstats FILE``. ``--each`` prints every cycle's line.
``--decisions FILE`` writes each cycle's binds, evictions, pipelines and unschedulable podgroups (with their
messages), one JSON line a cycle: two runs decide alike when the files are equal (unless the victim search ran out
of its time budget: ``--frozen-clock`` gives it none, as reclaim_bench's frozen clock does, the phases still timed).
``--actions`` runs other actions than KAI's default list.
RSS is the process's resident set now (not its peak), so growth across cycles shows. A cycle runs without the last
one's session held, as the scheduler's loop runs it (its second cycle freezes what lives on out of the cyclic GC).
"""

import argparse
import cProfile
import gc
import json
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from kai.cluster.memory import MemoryCluster
from kai.components.scheduler.loop import SchedulerLoop
from kai.components.shared.metrics import SchedulerMetrics
from kai.core.config import parse_config
from kai.core.framework.config import SearchBudgets
from kai.core.framework.decisions import CycleResult
from kai.core.model.meta import format_time

NOW = 1_767_225_600.0
GPUS_PER_NODE = 8
GANG = 8
TRAINING_GANGS = 3_000
INFERENCE_PODS = 7_000
IDLE_GPUS = 1_000
PENDING_SINGLES = 2_000
DEPARTMENTS, QUEUES_PER_DEPARTMENT = 5, 10
Objects = list[tuple[str, dict[str, Any]]]
UNLIMITED_SEARCH = SearchBudgets(action_s={"default": 0.0}, job_s=0.0, generator_s={"default": 0.0})


def _queue(name: str, parent: str, gpus: float) -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec: dict[str, Any] = {
        "resources": {"gpu": {"quota": gpus, "limit": -1, "overQuotaWeight": 1}, "cpu": unlimited, "memory": unlimited}
    }
    if parent:
        spec["parentQueue"] = parent
    return {"metadata": {"name": name, "creationTimestamp": "2025-01-01T00:00:00Z"}, "spec": spec}


def _node(i: int) -> dict[str, Any]:
    labels = {
        "nvidia.com/gpu.count": str(GPUS_PER_NODE),
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "topology.kubernetes.io/zone": f"zone-{i % 4}",
        "node.kubernetes.io/instance-type": "p5.48xlarge",
        "kubernetes.io/hostname": f"node-{i:05d}",
    }
    allocatable = {"cpu": "190", "memory": "2000Gi", "nvidia.com/gpu": str(GPUS_PER_NODE), "pods": "250"}
    return {"metadata": {"name": f"node-{i:05d}", "labels": labels}, "status": {"allocatable": allocatable}}


class _Builder:
    def __init__(self, nodes: int) -> None:
        self.nodes = nodes
        self.objects: Objects = []
        self.gpus_used = [0] * nodes
        self.next_gpu_node = 0
        self.queues = [f"q-{d}-{q}" for d in range(DEPARTMENTS) for q in range(QUEUES_PER_DEPARTMENT)]
        self.serial = 0

    def gpu_node(self) -> str:
        """Fills nodes' GPUs in turn (a training gang lands on one node, as binpacking puts it)."""
        while self.gpus_used[self.next_gpu_node] >= GPUS_PER_NODE:
            self.next_gpu_node += 1
        self.gpus_used[self.next_gpu_node] += 1
        return f"node-{self.next_gpu_node:05d}"

    def job(self, kind: str, size: int, gpus: int, nodes: list[str | None]) -> None:
        self.serial += 1
        name = f"{kind}-{self.serial}"
        queue = self.queues[self.serial % len(self.queues)]
        created = format_time(NOW - 3600 - self.serial)
        meta = {"name": name, "namespace": f"team-{queue}", "creationTimestamp": created, "uid": f"uid-{name}"}
        spec = {"queue": queue, "priorityClassName": "train" if gpus else "inference", "minMember": size}
        self.objects.append(("PodGroup", {"metadata": meta, "spec": spec}))
        requests = {"cpu": "4" if gpus else "1", "memory": "32Gi" if gpus else "2Gi"}
        if gpus:
            requests["nvidia.com/gpu"] = str(gpus)
        for i, node in enumerate(nodes):
            pod_spec: dict[str, Any] = {
                "schedulerName": "kai-scheduler",
                "priorityClassName": spec["priorityClassName"],
                "containers": [{"name": "main", "resources": {"requests": requests, "limits": requests}}],
            }
            if node:
                pod_spec["nodeName"] = node
            pod = {
                "metadata": {
                    "name": f"{name}-{i}",
                    "namespace": meta["namespace"],
                    "uid": f"uid-{name}-{i}",
                    "creationTimestamp": created,
                    "annotations": {"pod-group-name": name},
                    "labels": {"kai.scheduler/queue": queue, "app": kind},
                },
                "spec": pod_spec,
                "status": {"phase": "Running" if node else "Pending", "startTime": created if node else None},
            }
            self.objects.append(("Pod", pod))


def build(nodes: int, pods: int, pending: int) -> Objects:
    b = _Builder(nodes)
    gpus = nodes * GPUS_PER_NODE
    b.objects += [
        ("PriorityClass", {"metadata": {"name": "train"}, "value": 50}),
        ("PriorityClass", {"metadata": {"name": "inference"}, "value": 125}),
    ]
    for d in range(DEPARTMENTS):
        b.objects.append(("Queue", _queue(f"dept-{d}", "", gpus / DEPARTMENTS)))
    for queue in b.queues:
        b.objects.append(("Queue", _queue(queue, f"dept-{queue.split('-')[1]}", gpus / len(b.queues))))
    b.objects += [("Node", _node(i)) for i in range(nodes)]
    training = min(TRAINING_GANGS, (gpus - IDLE_GPUS) // GANG)
    for _ in range(training):
        b.job("train", GANG, 1, [b.gpu_node() for _ in range(GANG)])
    inference = min(INFERENCE_PODS, gpus - IDLE_GPUS - training * GANG)
    for _ in range(inference):
        b.job("infer", 1, 1, [b.gpu_node()])
    for i in range(max(0, pods - pending - training * GANG - inference)):
        b.job("cpu", 1, 0, [f"node-{i % nodes:05d}"])
    singles = min(PENDING_SINGLES, pending)
    for _ in range(singles):
        b.job("wait", 1, 1, [None])
    for _ in range((pending - singles) // GANG):
        b.job("gang", GANG, 1, [None] * GANG)
    return b.objects


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20


class _Timed:
    """Wraps a function to time its last call, wall and CPU seconds (the bench's own instrument)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.seconds = self.cpu_s = 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        started, cpu = time.perf_counter(), time.process_time()
        value = self.fn(*args, **kwargs)
        self.seconds, self.cpu_s = time.perf_counter() - started, time.process_time() - cpu
        return value


def decided(result: CycleResult) -> dict[str, Any]:
    """A cycle's decisions in a comparable form (everything the writer acts on, in the cycle's order)."""
    return {
        "binds": [[b.pod_key, b.node, list(b.gpu_groups)] for b in result.binds],
        "evictions": [[e.pod_key, e.node, e.action, e.message] for e in result.evictions],
        "pipelined": [[p.pod_key, p.node] for p in result.pipelined],
        "unschedulable": {key: [u.reason, u.message] for key, u in sorted(result.unschedulable.items())},
        "pod_errors": dict(sorted(result.pod_errors.items())),
        "started": sorted(result.started),
        "stale_since": sorted(result.stale_since.items()),
    }


def searched(result: CycleResult) -> str:
    """The victim search's work this cycle: pending jobs searched for and scenarios simulated per action, and the
    actions whose whole search budget ran out."""
    search = result.search
    jobs: Counter[str] = Counter()
    for (action, _, _), count in search.jobs.items():
        jobs[action] += count
    simulated: Counter[str] = Counter()
    for (action, _, state), count in search.scenarios.items():
        if state == "simulated":
            simulated[action] += count
    figures = "".join(f" {action}_jobs={n} {action}_simulated={simulated[action]}" for action, n in jobs.items())
    exhausted = ",".join(sorted(search.budget_exhausted))
    return figures + (f" budget_exhausted={exhausted}" if exhausted else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=4_000)
    parser.add_argument("--pods", type=int, default=140_000, help="every pod, running and pending")
    parser.add_argument("--pending", type=int, default=5_000)
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--profile", type=Path, help="write a cProfile of one cycle here")
    parser.add_argument("--profile-cycle", type=int, default=2, help="the cycle profiled (1: the first, which places)")
    parser.add_argument("--decisions", type=Path, help="write each cycle's decisions here (JSON lines)")
    parser.add_argument("--each", action="store_true", help="print every cycle's figures")
    parser.add_argument("--actions", help="the scheduler's actions (KAI's default list unless given), comma-separated")
    parser.add_argument(
        "--frozen-clock", action="store_true", help="search budgets never run out: decisions independent of speed"
    )
    args = parser.parse_args()

    started = time.perf_counter()
    objects = build(args.nodes, args.pods, args.pending)
    cluster = MemoryCluster()
    for kind, obj in objects:
        cluster.create(kind, obj)
    registry = CollectorRegistry()
    metrics = SchedulerMetrics(registry)
    config = parse_config({"actions": args.actions} if args.actions else {})
    if args.frozen_clock:
        config = replace(config, search_budgets=UNLIMITED_SEARCH)
    loop = SchedulerLoop(cluster, config, metrics, clock=lambda: NOW)
    del objects
    gc.collect()
    gc.freeze()
    pod_count = sum(1 for _ in loop.state.pods)
    print(
        f"bench field-build nodes={args.nodes} pods={pod_count} pending={args.pending} "
        f"seconds={time.perf_counter() - started:.1f} rss_mb={rss_mb():.0f}",
        flush=True,
    )
    snapshot = _Timed(loop.snapshots.take)
    loop.snapshots.take = snapshot  # type: ignore[method-assign]
    write = _Timed(loop.writer.write)
    loop.writer.write = write  # type: ignore[method-assign]
    cycles: list[dict[str, float]] = []
    rss: list[float] = []
    profiler = cProfile.Profile(time.process_time) if args.profile else None  # CPU time: the machine is shared
    decisions = args.decisions.open("w") if args.decisions else None
    for n in range(1, args.cycles + 1):
        profiling = profiler if n == args.profile_cycle else None
        if profiling is not None:
            profiling.enable()
        start, cpu = time.perf_counter(), time.process_time()
        session = loop.run_once()
        seconds, cpu_s = time.perf_counter() - start, time.process_time() - cpu
        if profiling is not None:
            profiling.disable()
            profiling.dump_stats(args.profile)
        result = session.result
        figures = {
            "seconds": seconds,
            "cpu_s": cpu_s,
            "snapshot_s": snapshot.seconds,
            "snapshot_cpu_s": snapshot.cpu_s,
            "open_ms": result.open_ms,
            **{f"{action}_ms": ms for action, ms in result.action_ms.items()},
            "close_ms": result.close_ms,
            "write_ms": 1000 * write.seconds,
        }
        if profiling is None:  # a profiled cycle runs several times slower: not a figure
            cycles.append(figures)
        if decisions is not None:
            decisions.write(json.dumps(decided(result)) + "\n")
        rss.append(rss_mb())
        if args.each or n == 1:
            print(
                f"bench field-cycle-{n} seconds={seconds:.3f} cpu_s={cpu_s:.3f} snapshot_s={snapshot.seconds:.3f} "
                f"snapshot_cpu_s={snapshot.cpu_s:.3f} snapshot_share={100 * snapshot.seconds / seconds:.0f}% "
                f"binds={len(result.binds)} evictions={len(result.evictions)} pipelined={len(result.pipelined)} "
                f"unschedulable={len(result.unschedulable)} rss_mb={rss[-1]:.0f}{searched(result)}"
                + (" profiled" if profiling is not None else ""),
                flush=True,
            )
        del session, result  # the next cycle runs without this one, as the scheduler's loop runs it
    if decisions is not None:
        decisions.close()
    steady = cycles[1:] or cycles
    walls = [c["seconds"] for c in steady]
    share = 100 * sum(c["snapshot_s"] for c in steady) / sum(walls)
    print(
        f"bench field-steady cycles={len(steady)} p50_s={statistics.median(walls):.3f} max_s={max(walls):.3f} "
        f"cpu_p50_s={statistics.median(c['cpu_s'] for c in steady):.3f} snapshot_p50_s="
        f"{statistics.median(c['snapshot_s'] for c in steady):.3f} snapshot_cpu_p50_s="
        f"{statistics.median(c['snapshot_cpu_s'] for c in steady):.3f} snapshot_share={share:.0f}% "
        f"rss_first_mb={rss[0]:.0f} rss_last_mb={rss[-1]:.0f}",
        flush=True,
    )
    phases = [key for key in steady[0] if key.endswith("_ms")]
    medians = " ".join(f"{key}={statistics.median(c.get(key, 0.0) for c in steady):.0f}" for key in phases)
    print(f"bench field-phases {medians}", flush=True)


if __name__ == "__main__":
    main()
