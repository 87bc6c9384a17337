"""Small clusters with podgroups that wait, for the proven-fix property (``test_proven_fixes.py``) and its bench
(``bench/fixes_bench.py``): queues under a department with quotas and limits, nodes of 2–8 GPUs in two racks,
running single-pod jobs of several priorities, and waiting podgroups (gangs, half-GPU pods, a rack topology, pods
larger than any node).

``cluster(pick)`` draws through ``pick`` (choose one of a sequence): hypothesis's ``sampled_from`` in the property,
a seeded ``random.Random.choice`` in the bench.
"""

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
Pick = Callable[[Sequence[T]], T]
NOW = "2026-01-01T00:00:00Z"
CLASSES = (("train", 50), ("build", 100), ("inference", 125))


def cluster(pick: Pick[Any]) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [
        {"kind": "PriorityClass", "metadata": {"name": name}, "value": value} for name, value in CLASSES
    ]
    objects.append({"kind": "Topology", "metadata": {"name": "racks"}, "spec": {"levels": [{"nodeLabel": "rack"}]}})
    objects.append(queue("dept", "", pick([-1, 8, 16]), pick([-1, 12, 24])))
    for team in ("a", "b"):
        quota = pick([0, 2, 4, 8])
        objects.append(queue(team, "dept", quota, pick([-1, quota, quota + 4])))
    nodes = {f"n{i}": pick([2, 4, 8, 8]) for i in range(pick([1, 2, 3, 4]))}
    objects += [_node(name, gpus, f"r{i % 2}") for i, (name, gpus) in enumerate(nodes.items())]
    count = 0
    for name, gpus in nodes.items():
        free = gpus
        for _ in range(pick([0, 1, 2, 3])):
            size = pick([1, 2, 4])
            if size > free:
                continue
            free -= size
            objects += _podgroup(f"run{count}", pick(["a", "b"]), pick(CLASSES)[0], [size], node=name)
            count += 1
    for i in range(pick([1, 2, 3])):
        pods = pick([1, 1, 2, 3])
        gpus = pick([1, 2, 2, 4, 4, 8, 0.5, 0.5, 16])
        topology = pick([None, None, "rack"])
        objects += _podgroup(f"wait{i}", pick(["a", "b"]), pick(CLASSES)[0], [gpus] * pods, topology=topology)
    return objects


def queue(name: str, parent: str, quota: float, limit: float) -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    gpu = {"quota": quota, "limit": limit, "overQuotaWeight": 1}
    spec: dict[str, Any] = {"resources": {"gpu": gpu, "cpu": unlimited, "memory": unlimited}}
    if parent:
        spec["parentQueue"] = parent
    return {"kind": "Queue", "metadata": {"name": name}, "spec": spec}


def _node(name: str, gpus: int, rack: str) -> dict[str, Any]:
    allocatable = {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": str(gpus), "pods": "20"}
    labels = {"kubernetes.io/hostname": name, "rack": rack}
    return {"kind": "Node", "metadata": {"name": name, "labels": labels}, "status": {"allocatable": allocatable}}


def _podgroup(
    name: str, queue: str, priority: str, gpus: list[float], node: str = "", topology: str | None = None
) -> list[dict[str, Any]]:
    spec: dict[str, Any] = {"queue": queue, "minMember": len(gpus), "priorityClassName": priority}
    if topology:
        spec["topologyConstraint"] = {"topology": "racks", "requiredTopologyLevel": topology}
    meta = {"name": name, "namespace": "team", "creationTimestamp": NOW}
    objects: list[dict[str, Any]] = [{"kind": "PodGroup", "metadata": meta, "spec": spec}]
    for i, amount in enumerate(gpus):
        annotations = {"pod-group-name": name}
        requests: dict[str, str] = {"cpu": "1"}
        if amount < 1:
            annotations["gpu-fraction"] = str(amount)
        else:
            requests["nvidia.com/gpu"] = str(int(amount))
        pod: dict[str, Any] = {
            "kind": "Pod",
            "metadata": {"name": f"{name}-{i}", "namespace": "team", "annotations": annotations},
            "spec": {
                "schedulerName": "kai-scheduler",
                "priorityClassName": priority,
                "containers": [{"name": "c", "resources": {"requests": requests, "limits": requests}}],
            },
            "status": {"phase": "Pending"},
        }
        if node:
            pod["spec"]["nodeName"] = node
            pod["status"] = {"phase": "Running", "startTime": NOW}
        objects.append(pod)
    return objects
