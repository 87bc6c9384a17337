"""How the embedded cluster reacts between cycles (scenario-format.md §4.2).

The writer records a cycle's decisions (BindRequests, pod deletions, podgroup annotations); the binder
stand-in binds pods named by BindRequests; the workload stand-in starts bound pods and lets deleted pods
terminate and be re-created by their controller, as a cluster with kubelets and controllers would.
"""

from typing import Any

from kai.cluster.port import ClusterClient
from kai.core.framework.decisions import CycleResult
from kai.core.model import names
from kai.core.model.meta import format_time


def write_decisions(cluster: ClusterClient, result: CycleResult, now: float) -> None:
    """What the scheduler writes: a BindRequest per bind, a deletion mark per eviction, start timestamps."""
    for bind in result.binds:
        namespace, pod_name = bind.pod_key.split("/", 1)
        cluster.create(
            "BindRequest",
            {
                "apiVersion": "scheduling.run.ai/v1alpha2",
                "metadata": {
                    "name": pod_name,
                    "namespace": namespace,
                    "labels": {names.SELECTED_NODE_LABEL: bind.node},
                },
                "spec": {
                    "podName": pod_name,
                    "selectedNode": bind.node,
                    "receivedResourceType": bind.received_resource_type,
                    "receivedGPU": {"count": bind.gpu_count, "portion": f"{bind.gpu_portion:.2f}"},
                    "selectedGPUGroups": list(bind.gpu_groups),
                },
            },
        )
    for eviction in result.evictions:
        pod = cluster.get("Pod", eviction.pod_key)
        if pod is not None:
            pod["metadata"]["deletionTimestamp"] = format_time(now)
            cluster.update("Pod", pod)
    for key, started in result.started.items():
        podgroup = cluster.get("PodGroup", key)
        if podgroup is not None:
            podgroup["metadata"].setdefault("annotations", {})[names.LAST_START_ANNOTATION] = format_time(started)
            cluster.update("PodGroup", podgroup)
    for key, since in result.stale_since.items():
        podgroup = cluster.get("PodGroup", key)
        if podgroup is not None:
            annotations = podgroup["metadata"].setdefault("annotations", {})
            if since is None:
                annotations.pop(names.STALE_ANNOTATION, None)
            else:
                annotations[names.STALE_ANNOTATION] = format_time(since)
            cluster.update("PodGroup", podgroup)
    for key in result.bind_requests_to_delete:
        cluster.delete("BindRequest", key)


def run_binder(cluster: ClusterClient) -> int:
    """Bind every pod a BindRequest names, then retire the request; returns how many pods were bound."""
    bound = 0
    for request in cluster.list("BindRequest"):
        meta, spec = request["metadata"], request["spec"]
        key = f"{meta['namespace']}/{spec['podName']}"
        pod = cluster.get("Pod", key)
        if pod is not None and not pod.get("spec", {}).get("nodeName"):
            pod.setdefault("spec", {})["nodeName"] = spec["selectedNode"]
            annotations = pod["metadata"].setdefault("annotations", {})
            annotations[names.RECEIVED_RESOURCE_TYPE_ANNOTATION] = spec.get("receivedResourceType", "Regular")
            groups = spec.get("selectedGPUGroups") or []
            if groups:
                pod["metadata"].setdefault("labels", {})[names.GPU_GROUP_LABEL] = groups[0]
            cluster.update("Pod", pod)
            bound += 1
        cluster.delete("BindRequest", f"{meta['namespace']}/{meta['name']}")
    return bound


def run_workload(cluster: ClusterClient, podgroups_being_deleted: set[str]) -> None:
    """Bound pods start; terminating pods finish and come back Pending, unless their podgroup is being deleted."""
    for pod in cluster.list("Pod"):
        meta: dict[str, Any] = pod["metadata"]
        spec: dict[str, Any] = pod.setdefault("spec", {})
        status: dict[str, Any] = pod.setdefault("status", {})
        key = f"{meta['namespace']}/{meta['name']}"
        podgroup = f"{meta['namespace']}/{meta.get('annotations', {}).get(names.POD_GROUP_ANNOTATION, '')}"
        if meta.get("deletionTimestamp"):
            if podgroup in podgroups_being_deleted:
                continue
            cluster.delete("Pod", key)
            for field in ("deletionTimestamp", "resourceVersion"):
                meta.pop(field, None)
            meta.get("labels", {}).pop(names.GPU_GROUP_LABEL, None)
            meta.get("annotations", {}).pop(names.RECEIVED_RESOURCE_TYPE_ANNOTATION, None)
            spec.pop("nodeName", None)
            pod["status"] = {"phase": "Pending"}
            cluster.create("Pod", pod)
        elif spec.get("nodeName") and status.get("phase", "Pending") == "Pending":
            status["phase"] = "Running"
            cluster.update("Pod", pod)
