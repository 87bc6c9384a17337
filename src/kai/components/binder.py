"""The binder: turns BindRequests into bound pods (KAI's binder, kai-reference.md §1.2).

For each BindRequest still pending it binds the pod to the selected node through the binding subresource, first
recording what the pod received (``received-resource-type``, its GPU group) and, for shared GPUs, making sure the
GPU group has its reservation pod. Success and failure are written to the BindRequest status and to the pod's
``PodBound`` condition. A request whose pod is already bound counts as done, so repeats are harmless.
"""

import logging
from collections.abc import Callable
from typing import Any

from kai.cluster.port import ClusterClient, Raw
from kai.core.model import names
from kai.core.model.meta import format_time

log = logging.getLogger(__name__)


class Binder:
    def __init__(self, cluster: ClusterClient, now: Callable[[], float]) -> None:
        self.cluster = cluster
        self.now = now

    def reconcile(self) -> int:
        """Process every pending BindRequest once; returns how many pods were bound."""
        bound = 0
        for request in self.cluster.list("BindRequest"):
            phase = (request.get("status") or {}).get("phase", "Pending")
            if phase in ("Succeeded", "Failed") or request["metadata"].get("deletionTimestamp"):
                continue
            try:
                bound += self._bind(request)
            except Exception as error:  # a failed bind is reported on its request; the others go on
                log.warning("binding %s failed: %s", request["metadata"].get("name"), error)
                self._finish(request, "Failed", str(error))
        self.sync_reservations()
        return bound

    def _bind(self, request: Raw) -> int:
        meta, spec = request["metadata"], request["spec"]
        namespace, pod_name, node = meta["namespace"], spec["podName"], spec["selectedNode"]
        pod = self.cluster.get("Pod", f"{namespace}/{pod_name}")
        if pod is None:
            raise LookupError(f"pod {namespace}/{pod_name} does not exist")
        if (pod.get("spec") or {}).get("nodeName"):
            self._finish(request, "Succeeded", "")
            return 0
        if self.cluster.get("Node", node) is None:
            raise LookupError(f"node {node} does not exist")
        received = spec.get("receivedResourceType", "Regular")
        groups: list[str] = spec.get("selectedGPUGroups") or []
        pod["metadata"].setdefault("annotations", {})[names.RECEIVED_RESOURCE_TYPE_ANNOTATION] = received
        if groups:
            pod["metadata"].setdefault("labels", {})[names.GPU_GROUP_LABEL] = groups[0]
            for group in groups:
                self._ensure_reservation(node, group)
        self.cluster.update("Pod", pod)
        self.cluster.bind_pod(namespace, pod_name, node)
        self._finish(request, "Succeeded", "")
        self._pod_bound(namespace, pod_name, node)
        return 1

    def _finish(self, request: Raw, phase: str, reason: str) -> None:
        status: dict[str, Any] = request.setdefault("status", {})
        status["phase"] = phase
        if reason:
            status["reason"] = reason
            status["failedAttempts"] = int(status.get("failedAttempts", 0)) + 1
        self.cluster.update_status("BindRequest", request)

    def _pod_bound(self, namespace: str, name: str, node: str) -> None:
        pod = self.cluster.get("Pod", f"{namespace}/{name}")
        if pod is None:
            return
        conditions: list[dict[str, Any]] = pod.setdefault("status", {}).setdefault("conditions", [])
        conditions[:] = [c for c in conditions if c.get("type") != "PodBound"]
        conditions.append(
            {
                "type": "PodBound",
                "status": "True",
                "reason": "Bound",
                "message": f"Pod bound to node {node}",
                "lastTransitionTime": format_time(self.now()),
            }
        )
        self.cluster.update_status("Pod", pod)

    def _reservation_name(self, node: str, group: str) -> str:
        return f"gpu-reservation-{node}-{group}"[:253]

    def _ensure_reservation(self, node: str, group: str) -> None:
        """One pod per shared GPU group holds the whole GPU for the pods sharing it (KAI's reservation pod)."""
        name = self._reservation_name(node, group)
        if self.cluster.get("Pod", f"{names.RESERVATION_NAMESPACE}/{name}") is not None:
            return
        gpu = {names.GPU: "1"}
        self.cluster.create(
            "Pod",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": names.RESERVATION_NAMESPACE,
                    "labels": {"app": names.RESERVATION_APP_LABEL_VALUE, names.GPU_GROUP_LABEL: group},
                    "annotations": {"karpenter.sh/do-not-disrupt": "true"},
                },
                "spec": {
                    "nodeName": node,
                    "containers": [
                        {
                            "name": "resource-reservation",
                            "image": "kai-resource-reservation",
                            "resources": {"requests": gpu, "limits": gpu},
                        }
                    ],
                },
                "status": {"phase": "Running"},
            },
        )

    def sync_reservations(self) -> None:
        """Remove reservation pods whose GPU group no longer has a live pod on that node."""
        used: set[tuple[str, str]] = set()
        reservations: list[Raw] = []
        for pod in self.cluster.list("Pod"):
            meta = pod["metadata"]
            group = (meta.get("labels") or {}).get(names.GPU_GROUP_LABEL)
            node = (pod.get("spec") or {}).get("nodeName")
            if not group or not node:
                continue
            if meta.get("namespace") == names.RESERVATION_NAMESPACE:
                reservations.append(pod)
            elif (pod.get("status") or {}).get("phase", "Pending") in ("Pending", "Running"):
                used.add((node, group))
        for pod in reservations:
            group = pod["metadata"]["labels"][names.GPU_GROUP_LABEL]
            if (pod["spec"]["nodeName"], group) not in used:
                key = f"{names.RESERVATION_NAMESPACE}/{pod['metadata']['name']}"
                self.cluster.delete("Pod", key)
