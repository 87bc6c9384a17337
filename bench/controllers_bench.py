"""The status controllers at KAI's field scale (issue 10): the PodGroup and Queue status controllers of ``kai
controllers`` / ``kai all`` over the in-memory cluster that field_bench.py builds (4,000 nodes / 140,000 pods,
5,000 pending, 55 queues). Prints figures; not a test.

A pass is what the runtime runs every 2 s: the PodGroup status controller (settling, as the runtime runs it) then
the Queue status controller. Measured: the first pass (every object new), the second (the settled PodGroup statuses
written), the third (after-writes: the changes those writes made come back), a quiet pass (nothing changed), the
pass after ``--changes`` pod changes (a tenth of them pending pods bound and running, three tenths running pods
finished, two tenths deleted, the rest only relabelled) and the pass after it (changes-settle: its settled statuses
written).

bench controllers-build nodes=<n> pods=<m> podgroups=<g> queues=<q> seconds=<s> rss_mb=<mb>
bench controllers-<pass> cpu_s=<CPU s> wall_s=<s> podgroup_writes=<n> queue_writes=<n> rss_mb=<mb>
bench controllers-memory controllers_mb=<RSS the controllers' state added, after the first pass> peak_rss_mb=<mb>

CPU seconds are the process's (time.process_time). ``--profile FILE`` writes a cProfile (CPU time) of the pass
named by ``--profile-pass`` and prints its top functions.
"""

import argparse
import cProfile
import gc
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from field_bench import build, rss_mb
from kai.cluster.memory import MemoryCluster
from kai.cluster.port import Raw
from kai.components.controllers import PodGroupStatusController, QueueStatusController
from kai.components.shared.parallel import Writes

PASSES = ("first", "settle", "after-writes", "quiet", "changes", "changes-settle")


def peak_rss_mb() -> float:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


class _CountedCluster(MemoryCluster):
    """Counts status writes by kind."""

    def __init__(self) -> None:
        super().__init__()
        self.status_writes: dict[str, int] = {}

    def patch_status(self, kind: str, key: str, status: Raw, *, strategic: bool = False) -> Raw:
        self.status_writes[kind] = self.status_writes.get(kind, 0) + 1
        return super().patch_status(kind, key, status, strategic=strategic)


def change_pods(cluster: MemoryCluster, count: int) -> None:
    """``count`` pod changes as a busy cluster makes them between two passes."""
    pods = cluster.list("Pod")
    pending = [p for p in pods if not p["spec"].get("nodeName")]
    running = [p for p in pods if p["spec"].get("nodeName")]
    nodes = [n["metadata"]["name"] for n in cluster.list("Node")]
    bound, finished, deleted = count // 10, 3 * count // 10, 2 * count // 10
    for i, pod in enumerate(pending[:bound]):
        pod["spec"]["nodeName"] = nodes[i % len(nodes)]
        pod["status"]["phase"] = "Running"
        cluster.update("Pod", pod)
    for pod in running[:finished]:
        pod["status"]["phase"] = "Succeeded"
        cluster.update("Pod", pod)
    for pod in running[finished : finished + deleted]:
        cluster.finalize("Pod", f"{pod['metadata']['namespace']}/{pod['metadata']['name']}")
    for pod in running[finished + deleted : finished + deleted + count - bound - finished - deleted]:
        pod["metadata"]["labels"]["bench"] = "relabelled"
        cluster.update("Pod", pod)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=4_000)
    parser.add_argument("--pods", type=int, default=140_000, help="every pod, running and pending")
    parser.add_argument("--pending", type=int, default=5_000)
    parser.add_argument("--changes", type=int, default=1_000, help="pod changes before the changes pass")
    parser.add_argument("--profile", type=Path, help="write a cProfile of one pass here")
    parser.add_argument("--profile-pass", choices=PASSES, default="changes")
    args = parser.parse_args()

    started = time.perf_counter()
    cluster = _CountedCluster()
    for kind, obj in build(args.nodes, args.pods, args.pending):
        cluster.create(kind, obj)
    gc.collect()
    gc.freeze()
    counts = {kind: len(cluster._store.get(kind, {})) for kind in ("Node", "Pod", "PodGroup", "Queue")}
    base_rss = rss_mb()
    print(
        f"bench controllers-build nodes={counts['Node']} pods={counts['Pod']} podgroups={counts['PodGroup']} "
        f"queues={counts['Queue']} seconds={time.perf_counter() - started:.1f} rss_mb={base_rss:.0f}",
        flush=True,
    )
    run_pass = controllers(cluster)
    for name in PASSES:
        if name == "changes":
            change_pods(cluster, args.changes)
        before = dict(cluster.status_writes)
        profiler = cProfile.Profile(time.process_time) if args.profile and name == args.profile_pass else None
        if profiler is not None:
            profiler.enable()
        wall, cpu = time.perf_counter(), time.process_time()
        run_pass()
        wall_s, cpu_s = time.perf_counter() - wall, time.process_time() - cpu
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(args.profile)
        writes = {kind: cluster.status_writes.get(kind, 0) - before.get(kind, 0) for kind in ("PodGroup", "Queue")}
        print(
            f"bench controllers-{name} cpu_s={cpu_s:.3f} wall_s={wall_s:.3f} podgroup_writes={writes['PodGroup']} "
            f"queue_writes={writes['Queue']} rss_mb={rss_mb():.0f}",
            flush=True,
        )
        if name == "first":
            print(
                f"bench controllers-memory controllers_mb={rss_mb() - base_rss:.0f} peak_rss_mb={peak_rss_mb():.0f}",
                flush=True,
            )
    if args.profile:
        pstats.Stats(str(args.profile)).sort_stats("cumulative").print_stats(25)


def controllers(cluster: MemoryCluster) -> Callable[[], Any]:
    """The controllers as ``kai controllers`` runs them; returns one pass."""
    writes = Writes()
    podgroups = PodGroupStatusController(cluster, writes, settle=True)
    queues = QueueStatusController(cluster, podgroups, writes=writes)

    def run_pass() -> None:
        podgroups.reconcile()
        queues.reconcile()

    return run_pass


if __name__ == "__main__":
    main()
