"""Workloads as their controllers write them, and the PodGroups the pod-grouper makes of them on the in-memory
cluster (the same port a real API server sits behind)."""

from __future__ import annotations

from typing import Any

from kai.cluster.memory import MemoryCluster
from kai.components.podgrouper import PodGrouper, Settings

NS = "ml"
PRIORITY_CLASSES = [
    {"kind": "PriorityClass", "metadata": {"name": name}, "value": value}
    for name, value in (("train", 50), ("build", 100), ("inference", 125), ("high", 1000))
]


def obj(
    api_version: str,
    kind: str,
    name: str,
    spec: dict[str, Any] | None = None,
    *,
    owner: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
    uid: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": uid or f"uid-{name}"}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    if owner:
        meta["ownerReferences"] = [ref(owner)]
    body: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec or {}}
    if status:
        body["status"] = status
    return body


def pod(
    name: str,
    owner: dict[str, Any] | None = None,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body = {"schedulerName": "kai-scheduler", "containers": [{"name": "main", "image": "busybox"}], **spec}
    return obj("v1", "Pod", name, body, owner=owner, labels=labels, annotations=annotations)


def ref(owner: dict[str, Any]) -> dict[str, Any]:
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"]}


def grouped(*objects: dict[str, Any], settings: Settings | None = None) -> MemoryCluster:
    """A cluster holding ``objects`` (and KAI's priority classes) after one pass of the pod-grouper."""
    cluster = MemoryCluster([*PRIORITY_CLASSES, *objects])
    PodGrouper(cluster, settings=settings).reconcile()
    return cluster


def podgroup_of(cluster: MemoryCluster, pod_name: str) -> dict[str, Any]:
    """The PodGroup the pod was pointed at (it exists: the pod is annotated only once its PodGroup is written)."""
    current = cluster.get("Pod", f"{NS}/{pod_name}")
    assert current is not None
    name = (current["metadata"].get("annotations") or {}).get("pod-group-name")
    assert name, f"pod {pod_name} was not grouped; warnings: {warnings(cluster, pod_name)}"
    podgroup = cluster.get("PodGroup", f"{NS}/{name}")
    assert podgroup is not None
    return podgroup


def spec_of(cluster: MemoryCluster, pod_name: str) -> tuple[str, dict[str, Any]]:
    podgroup = podgroup_of(cluster, pod_name)
    return podgroup["metadata"]["name"], podgroup["spec"]


def subgroup_of(cluster: MemoryCluster, pod_name: str) -> str | None:
    current = cluster.get("Pod", f"{NS}/{pod_name}")
    assert current is not None
    return (current["metadata"].get("labels") or {}).get("kai.scheduler/subgroup-name")


def warnings(cluster: MemoryCluster, pod_name: str) -> list[str]:
    """The PodGrouperWarning events' messages about the pod, oldest first."""
    return [
        event["message"]
        for event in cluster.list("Event")
        if event["involvedObject"]["name"] == pod_name and event["reason"] == "PodGrouperWarning"
    ]
