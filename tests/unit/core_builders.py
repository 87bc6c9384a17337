"""Small builders of plain Kubernetes objects for tests that drive the core directly (no scenario file)."""

from typing import Any

from kai.core.model.meta import format_time
from kai.core.state.cluster_state import ClusterState

T0 = 1_735_689_600.0
"""2025-01-01T00:00:00Z, the clock of these tests."""


def queue(name: str, parent: str = "", gpu_quota: float = -1, weight: float = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resources": {
            "gpu": {"quota": gpu_quota, "limit": -1, "overQuotaWeight": weight},
            "cpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
            "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
        }
    }
    if parent:
        spec["parentQueue"] = parent
    return {"metadata": {"name": name, "creationTimestamp": format_time(T0)}, "spec": spec}


def node(name: str, gpus: int) -> dict[str, Any]:
    allocatable = {"cpu": "20000", "memory": "20G", "nvidia.com/gpu": str(gpus), "pods": "110"}
    return {
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.count": str(gpus)}},
        "status": {"allocatable": allocatable},
    }


def podgroup(name: str, queue_name: str, created: float, **spec: Any) -> dict[str, Any]:
    annotations = spec.pop("annotations", {})
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "creationTimestamp": format_time(created),
            "annotations": annotations,
        },
        "spec": {"queue": queue_name, "priorityClassName": spec.pop("priority_class", "train"), **spec},
    }


def pod(
    name: str, group: str, gpus: int = 1, node_name: str = "", deleted: float | None = None, subgroup: str = ""
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "annotations": {"pod-group-name": group}}
    if subgroup:
        meta["labels"] = {"kai.scheduler/subgroup-name": subgroup}
    if deleted is not None:
        meta["deletionTimestamp"] = format_time(deleted)
    spec: dict[str, Any] = {
        "schedulerName": "kai-scheduler",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)}}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": meta, "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def resized_pod(
    spec_cpu: str,
    status_cpu: str | None = None,
    allocated_cpu: str | None = None,
    infeasible: bool = False,
    node_name: str = "n1",
    **extra: Any,
) -> dict[str, Any]:
    """A running pod (web, in PodGroup web) of one container whose spec asks ``spec_cpu`` while the kubelet reports
    ``status_cpu`` running and ``allocated_cpu`` allocated (absent: the kubelet reports no resources), as during an
    in-place resize (``pods/resize``)."""
    status: dict[str, Any] = {"phase": "Running"}
    if status_cpu is not None:
        reported: dict[str, Any] = {"name": "c", "resources": {"requests": {"cpu": status_cpu, "memory": "1Gi"}}}
        if allocated_cpu is not None:
            reported["allocatedResources"] = {"cpu": allocated_cpu, "memory": "1Gi"}
        status["containerStatuses"] = [reported]
    if infeasible:
        status["conditions"] = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
    requests = {"cpu": spec_cpu, "memory": "1Gi"}
    return {
        "metadata": {"name": "web", "namespace": "default", "annotations": {"pod-group-name": "web"}, **extra},
        "spec": {
            "schedulerName": "kai-scheduler",
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"requests": requests, "limits": requests}}],
        },
        "status": status,
    }


def numa_topology(
    name: str, policy: str, zones: dict[str, dict[str, str]], scope: str = "pod", **extra: Any
) -> dict[str, Any]:
    """A NodeResourceTopology for node ``name``: its kubelet's Topology Manager policy and scope, and its NUMA zones'
    resources (each all available)."""
    return {
        "metadata": {"name": name},
        "attributes": [
            {"name": "topologyManagerPolicy", "value": policy},
            {"name": "topologyManagerScope", "value": scope},
        ],
        "zones": [
            {
                "name": zone,
                "type": "Node",
                "resources": [{"name": r, "allocatable": q, "available": q} for r, q in amounts.items()],
            }
            for zone, amounts in zones.items()
        ],
        **extra,
    }


def cluster(*objects: tuple[str, dict[str, Any]]) -> ClusterState:
    state = ClusterState()
    state.apply("PriorityClass", {"metadata": {"name": "train"}, "value": 50})
    state.apply("PriorityClass", {"metadata": {"name": "build"}, "value": 100})
    for kind, raw in objects:
        error = state.apply(kind, raw)
        assert error is None, error
    return state
