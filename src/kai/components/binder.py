"""The binder: turns BindRequests into bound pods (KAI's binder, kai-reference.md §1.2).

For each BindRequest still pending it binds the pod to the selected node through the binding subresource, first
recording what the pod received (``received-resource-type``, its GPU group) and, for shared GPUs, making sure the
GPU group has its reservation pod. Success and failure are written to the BindRequest status and to the pod's
``PodBound`` condition. A request whose pod is already bound counts as done, so repeats are harmless.
"""

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from kai.cluster.port import ClusterClient, Raw
from kai.components.parallel import Writes
from kai.core.model import names
from kai.core.model.meta import format_time

log = logging.getLogger(__name__)


class Binder:
    def __init__(self, cluster: ClusterClient, now: Callable[[], float], writes: Writes | None = None) -> None:
        self.cluster = cluster
        self.now = now
        self.writes = writes or Writes()
        self._pending: dict[str, Raw] = {}
        self._reservations = False
        self._lock = threading.Lock()
        cluster.subscribe(self._on_change)

    def _on_change(self, kind: str, obj: Mapping[str, Any], deleted: bool) -> None:
        """Track pending BindRequests from events, so a pass does not re-read every request in the cluster."""
        meta = obj.get("metadata") or {}
        if kind == "Pod" and (meta.get("labels") or {}).get("app") == names.RESERVATION_APP_LABEL_VALUE:
            self._reservations = True
        if kind != "BindRequest":
            return
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        phase = (obj.get("status") or {}).get("phase", "Pending")
        with self._lock:
            if deleted or phase in ("Succeeded", "Failed") or meta.get("deletionTimestamp"):
                self._pending.pop(key, None)
            else:
                self._pending[key] = dict(obj)

    def reconcile(self) -> int:
        """Process every pending BindRequest once (independent requests side by side); returns how many pods
        were bound."""
        with self._lock:
            pending, self._pending = list(self._pending.values()), {}
        bound = self.writes.each("bind", pending, self._bind_or_fail)
        if self._reservations:
            self.sync_reservations()
        return bound

    def _bind_or_fail(self, request: Raw) -> None:
        try:
            self._bind(request)
        except Exception as error:  # a failed bind is reported on its request; the others go on
            log.warning("binding %s failed: %s", request["metadata"].get("name"), error)
            try:
                self._finish(request, "Failed", str(error))
            except Exception:  # not even reported: try the whole request again on the next pass
                key = f"{request['metadata']['namespace']}/{request['metadata']['name']}"
                with self._lock:
                    self._pending.setdefault(key, request)
            raise

    def _bind(self, request: Raw) -> None:
        meta, spec = request["metadata"], request["spec"]
        namespace, pod_name, node = meta["namespace"], spec["podName"], spec["selectedNode"]
        pod = self.cluster.get("Pod", f"{namespace}/{pod_name}")
        if pod is None:
            raise LookupError(f"pod {namespace}/{pod_name} does not exist")
        if (pod.get("spec") or {}).get("nodeName"):
            self._finish(request, "Succeeded", "")
            return
        if self.cluster.get("Node", node) is None:
            raise LookupError(f"node {node} does not exist")
        received = spec.get("receivedResourceType", "Regular")
        groups: list[str] = spec.get("selectedGPUGroups") or []
        pod["metadata"].setdefault("annotations", {})[names.RECEIVED_RESOURCE_TYPE_ANNOTATION] = received
        if groups:
            pod["metadata"].setdefault("labels", {})[names.GPU_GROUP_LABEL] = groups[0]
            self._reservations = True
            for group in groups:
                self._ensure_reservation(node, group)
        self.cluster.update("Pod", pod)
        try:
            self.cluster.bind_pod(namespace, pod_name, node)
        except Exception:
            self._rollback(namespace, pod_name)
            raise
        self._allocate_claims(pod, spec.get("resourceClaimAllocations") or [])
        self._finish(request, "Succeeded", "")
        self._pod_bound(namespace, pod_name, node)

    def _allocate_claims(self, pod: Raw, allocations: list[Raw]) -> None:
        """Write the devices chosen for the pod's DRA claims onto the claims and reserve them for the pod."""
        meta = pod["metadata"]
        names_to_claims = {
            entry.get("name"): entry.get("resourceClaimName")
            for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        }
        names_to_claims.update(
            (entry.get("name"), entry.get("resourceClaimName"))
            for entry in (pod.get("spec") or {}).get("resourceClaims") or []
            if entry.get("resourceClaimName")
        )
        for allocation in allocations:
            claim_name = names_to_claims.get(allocation.get("name"))
            claim = self.cluster.get("ResourceClaim", f"{meta['namespace']}/{claim_name}") if claim_name else None
            if claim is None:
                continue
            status: dict[str, Any] = claim.setdefault("status", {})
            status.setdefault("allocation", allocation.get("allocation") or {})
            consumers: list[dict[str, Any]] = status.setdefault("reservedFor", [])
            if all(c.get("uid") != meta.get("uid") for c in consumers):
                consumers.append({"resource": "pods", "name": meta["name"], "uid": meta.get("uid", meta["name"])})
            self.cluster.update_status("ResourceClaim", claim)

    def _rollback(self, namespace: str, name: str) -> None:
        """Undo what a failed bind wrote on the pod (its GPU group), so a retry starts clean (KAI's Rollback)."""
        pod = self.cluster.get("Pod", f"{namespace}/{name}")
        if pod is not None and (pod["metadata"].get("labels") or {}).pop(names.GPU_GROUP_LABEL, None) is not None:
            self.cluster.update("Pod", pod)
        self.sync_reservations()

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
