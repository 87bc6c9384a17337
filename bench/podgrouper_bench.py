"""Pod-grouper throughput on the in-memory cluster: the first pass over a burst of pods (PodGroups written, pods
pointed at them) and a pass after every pod changed once (their PodGroups recomputed, nothing to write). Prints one
line per case; not a test.

bench podgrouper <case> pods=<n> podgroups=<g> first_s=<s> first_pods_per_s=<r> again_s=<s> again_pods_per_s=<r>
"""

import time
from collections.abc import Callable
from typing import Any

from kai.cluster.memory import MemoryCluster
from kai.components.podgrouper import PodGrouper

NS = "bench"
PODS = 2000


def _obj(api_version: str, kind: str, name: str, spec: dict[str, Any], owner: dict[str, Any] | None = None) -> Any:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}"}
    if owner:
        ref = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"]}
        meta["ownerReferences"] = [ref | {"uid": owner["metadata"]["uid"]}]
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec}


def _pod(name: str, owner: dict[str, Any], **labels: str) -> Any:
    spec = {"schedulerName": "kai-scheduler", "containers": [{"name": "main"}]}
    pod = _obj("v1", "Pod", name, spec, owner)
    pod["metadata"]["labels"] = {"kai.scheduler/queue": "default-queue", **labels}
    return pod


def one_job() -> list[Any]:
    job = _obj("batch/v1", "Job", "etl", {"parallelism": PODS})
    return [job, *(_pod(f"etl-{i}", job) for i in range(PODS))]


def deployments() -> list[Any]:
    objects = []
    for d in range(PODS // 10):
        deployment = _obj("apps/v1", "Deployment", f"web-{d}", {})
        replicas = _obj("apps/v1", "ReplicaSet", f"web-{d}-5d9", {}, deployment)
        objects += [deployment, replicas, *(_pod(f"web-{d}-5d9-{i}", replicas) for i in range(10))]
    return objects


def pytorch_jobs() -> list[Any]:
    objects = []
    for j in range(PODS // 8):
        specs = {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 7}}}
        job = _obj("kubeflow.org/v1", "PyTorchJob", f"bert-{j}", specs)
        role = "training.kubeflow.org/replica-type"
        pods = [_pod(f"bert-{j}-master-0", job, **{role: "master"})]
        pods += [_pod(f"bert-{j}-worker-{i}", job, **{role: "worker"}) for i in range(7)]
        objects += [job, *pods]
    return objects


CASES: list[tuple[str, Callable[[], list[Any]]]] = [
    ("job", one_job),
    ("deployments", deployments),
    ("pytorchjobs", pytorch_jobs),
]


def main() -> None:
    classes = [
        {"kind": "PriorityClass", "metadata": {"name": n}, "value": v} for n, v in (("train", 50), ("inference", 125))
    ]
    for name, build in CASES:
        cluster = MemoryCluster([*classes, *build()])
        grouper = PodGrouper(cluster)
        start = time.perf_counter()
        assigned = grouper.reconcile()
        first = time.perf_counter() - start
        for pod in cluster.list("Pod"):
            pod["status"] = {"phase": "Running"}
            cluster.update("Pod", pod)
        start = time.perf_counter()
        grouper.reconcile()
        again = time.perf_counter() - start
        podgroups = len(cluster.list("PodGroup"))
        print(
            f"bench podgrouper {name} pods={assigned} podgroups={podgroups} first_s={first:.2f} "
            f"first_pods_per_s={assigned / first:.0f} again_s={again:.2f} again_pods_per_s={assigned / again:.0f}"
        )


if __name__ == "__main__":
    main()
