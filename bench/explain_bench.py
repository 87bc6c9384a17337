"""``kai explain`` with and without the search for proven fixes, on a captured-like cluster of N 8-GPU nodes (ten
teams under a department, 90 % of the GPUs running, jobs waiting). Not a test; per size and podgroup it prints

bench explain nodes=<n> pods=<n> podgroup=<name> inspect_s=<the explain without a search: load, one cycle>
search_s=<the search for fixes, wall> search_cpu_s=<this process and its proofs' children> proofs=<n tried>
proven=<n> ran_out=<time|candidates|-> fix=<the first proven fix>

Podgroups: ``limited``, a gang of a team held by its GPU limit (its running pods non-preemptible, so that nothing
moves them); ``llama``, four
8-GPU pods of a team at its quota on a fragmented cluster (no node has 8 GPUs free; reclaim may not take them). The
search has the default budget (``--budget`` seconds, ``--candidates``); wall times on a shared machine depend on
its load (the CPU seconds much less).
"""

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from kai.components.insight.explain import explain_podgroup
from kai.components.insight.fixes.found import DEFAULT_CANDIDATES, DEFAULT_SECONDS, Budget
from kai.components.insight.fixes.search import FixFinder
from kai.components.insight.inspect import inspect
from kai.components.sim.scenario import load_scenario

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "properties"))
from waiting_clusters import queue

TEAMS = 10
NOW = "2026-01-01T01:00:00Z"


def cluster(nodes: int) -> list[dict[str, Any]]:
    share = nodes * 8 // TEAMS
    objects: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "train"}, "value": 50},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "build"}, "value": 100},
        queue("dept", "", -1, -1),
    ]
    objects += [queue(f"team-{t}", "dept", share, share + 8 if t == 1 else -1) for t in range(TEAMS)]
    for n in range(nodes):
        labels = {"kubernetes.io/hostname": f"node-{n:04d}", "zone": f"z{n % 4}"}
        allocatable = {"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "8", "pods": "110"}
        objects.append(
            {
                "kind": "Node",
                "metadata": {"name": f"node-{n:04d}", "labels": labels},
                "status": {"allocatable": allocatable},
            }
        )
    job = 0
    for n in range(nodes):  # every tenth node 6 × 1 GPU (2 free), the others 4 × 2 GPUs (full)
        sizes = [1] * 6 if n % 10 == 9 else [2] * 4
        for gpus in sizes:
            team = n % TEAMS
            objects += _podgroup(f"r{job}", f"team-{team}", [gpus], f"node-{n:04d}", "build" if team == 1 else "train")
            job += 1
    objects += _podgroup("llama", "team-0", [8] * 4)
    objects += _podgroup("limited", "team-1", [1] * 10)
    for i in range(20):
        objects += _podgroup(f"w{i}", f"team-{i % TEAMS}", [4])
    return objects


def _podgroup(name: str, queue: str, gpus: list[int], node: str = "", priority: str = "train") -> list[dict[str, Any]]:
    meta = {"name": name, "namespace": "work", "creationTimestamp": "2026-01-01T00:00:00Z"}
    spec = {"queue": queue, "minMember": len(gpus), "priorityClassName": priority}
    objects: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": meta, "spec": spec}
    ]
    for i, amount in enumerate(gpus):
        resources = {"limits": {"nvidia.com/gpu": str(amount)}, "requests": {"cpu": "1"}}
        pod: dict[str, Any] = {
            "kind": "Pod",
            "metadata": {"name": f"{name}-{i}", "namespace": "work", "annotations": {"pod-group-name": name}},
            "spec": {
                "schedulerName": "kai-scheduler",
                "priorityClassName": "train",
                "containers": [{"name": "c", "resources": resources}],
            },
            "status": {"phase": "Pending"},
        }
        if node:
            pod["spec"]["nodeName"] = node
            pod["status"] = {"phase": "Running", "startTime": "2026-01-01T00:01:00Z"}
        objects.append(pod)
    return objects


def cpu_s() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 500])
    parser.add_argument("--budget", type=float, default=DEFAULT_SECONDS)
    parser.add_argument("--candidates", type=int, default=DEFAULT_CANDIDATES)
    args = parser.parse_args()
    for nodes in args.sizes:
        objects = cluster(nodes)
        pods = sum(1 for obj in objects if obj["kind"] == "Pod")
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "cluster.yaml"
            path.write_text(yaml.safe_dump({"name": f"bench-{nodes}", "now": NOW, "objects": objects}))
            for name in ("limited", "llama"):
                started = time.perf_counter()
                ins = inspect(load_scenario(path))
                explain_podgroup(ins, f"work/{name}")
                inspected = time.perf_counter() - started
                finder = FixFinder(ins, Budget(args.budget, args.candidates))
                started, cpu = time.perf_counter(), cpu_s()
                told = explain_podgroup(ins, f"work/{name}", prove=finder.search)
                wall, used = time.perf_counter() - started, cpu_s() - cpu
                fixes = told["fixes"] or {"proven": [], "tried": [], "ranOut": None}
                first = fixes["proven"][0]["text"] if fixes["proven"] else "-"
                print(
                    f"bench explain nodes={nodes} pods={pods} podgroup={name} inspect_s={inspected:.2f} "
                    f"search_s={wall:.2f} search_cpu_s={used:.2f} proofs={len(fixes['proven']) + len(fixes['tried'])} "
                    f"proven={len(fixes['proven'])} ran_out={fixes['ranOut'] or '-'} fix={first!r}"
                )


if __name__ == "__main__":
    main()
