"""Writing a cycle's decisions back to the cluster, as KAI's cache and status updater do (kai-reference.md §3.5).

Binds become BindRequests (the binder binds), evictions become pod deletions, podgroups get their start and
staleness annotations, and every waiting podgroup gets KAI's scheduling condition, its pending pods the
``PodScheduled=False`` condition and events. Every write is idempotent: an existing BindRequest is left alone,
an unchanged condition is not rewritten.
"""

import itertools
import logging
from collections.abc import Callable
from typing import Any

from kai.cluster.port import ClusterClient, Raw
from kai.components.parallel import Writes
from kai.core.framework.decisions import Bind, CycleResult, Eviction, Unschedulable
from kai.core.model import names
from kai.core.model.meta import format_time

log = logging.getLogger(__name__)
COMPONENT = "kai-scheduler"
NODE_POOL = "default"


class DecisionWriter:
    def __init__(self, cluster: ClusterClient, now: Callable[[], float], writes: Writes | None = None) -> None:
        self.cluster = cluster
        self.now = now
        self.writes = writes or Writes()
        self._sequence = itertools.count(1)

    def write(self, result: CycleResult) -> None:
        """Apply every decision; a failure on one object is logged and the others still go out."""
        writes = self.writes
        writes.each("bind", result.binds, self._bind_request)
        writes.each("evict", result.evictions, self._evict)
        writes.each(
            "start", result.started.items(), lambda item: self._annotate(item[0], names.LAST_START_ANNOTATION, item[1])
        )
        writes.each(
            "stale", result.stale_since.items(), lambda item: self._annotate(item[0], names.STALE_ANNOTATION, item[1])
        )
        writes.each(
            "delete bind request", result.bind_requests_to_delete, lambda key: self.cluster.delete("BindRequest", key)
        )
        writes.each("podgroup condition", result.unschedulable.values(), self._podgroup_condition)
        writes.each(
            "pod condition",
            result.pod_errors.items(),
            lambda item: self._pod_unschedulable(*item, mark=item[0] not in result.events_only),
        )

    def _bind_request(self, bind: Bind) -> None:
        namespace, pod_name = bind.pod_key.split("/", 1)
        if self.cluster.get("BindRequest", bind.pod_key) is not None:
            return
        self.cluster.create(
            "BindRequest",
            {
                "apiVersion": "scheduling.run.ai/v1alpha2",
                "kind": "BindRequest",
                "metadata": {
                    "name": pod_name,
                    "namespace": namespace,
                    "labels": {names.SELECTED_NODE_LABEL: bind.node},
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": bind.pod_uid, "controller": False}
                    ],
                },
                "spec": {
                    "podName": pod_name,
                    "selectedNode": bind.node,
                    "receivedResourceType": bind.received_resource_type,
                    "receivedGPU": {"count": bind.gpu_count, "portion": f"{bind.gpu_portion:.2f}"},
                    "selectedGPUGroups": list(bind.gpu_groups),
                    "resourceClaimAllocations": [
                        {
                            "name": allocation.name,
                            "allocation": {
                                "devices": {
                                    "results": [
                                        {"request": request, "driver": driver, "pool": pool, "device": device}
                                        for request, driver, pool, device in allocation.results
                                    ]
                                }
                            },
                        }
                        for allocation in bind.claim_allocations
                    ],
                },
            },
        )
        self.event(
            "Pod",
            bind.pod_key,
            "Normal",
            "Scheduled",
            f"Successfully assigned pod {bind.pod_key} to node {bind.node} at node-pool {NODE_POOL}",
        )

    def _evict(self, eviction: Eviction) -> None:
        self.event("Pod", eviction.pod_key, "Normal", "Evict", eviction.message)
        self.event("PodGroup", eviction.podgroup_key, "Normal", "Evict", eviction.message)
        self.cluster.delete("Pod", eviction.pod_key)

    def _annotate(self, podgroup_key: str, annotation: str, when: float | None) -> None:
        podgroup = self.cluster.get("PodGroup", podgroup_key)
        if podgroup is None:
            return
        annotations = podgroup["metadata"].setdefault("annotations", {})
        if when is None:
            if annotations.pop(annotation, None) is None:
                return
        else:
            annotations[annotation] = format_time(when)
        self.cluster.update("PodGroup", podgroup)

    def _podgroup_condition(self, waiting: Unschedulable) -> None:
        podgroup = self.cluster.get("PodGroup", waiting.podgroup_key)
        if podgroup is None:
            return
        status: dict[str, Any] = podgroup.setdefault("status", {})
        conditions: list[dict[str, Any]] = status.setdefault("schedulingConditions", [])
        current = next((c for c in conditions if c.get("nodePool") == NODE_POOL), None)
        reasons = [{"reason": waiting.reason, "message": waiting.detailed_message.strip()}]
        if current is not None and current.get("message") == waiting.message and current.get("reasons") == reasons:
            return
        transition = str(int((current or {}).get("transitionID", "0")) + 1)
        condition = {
            "type": "UnschedulableOnNodePool",
            "nodePool": NODE_POOL,
            "reason": "Unschedulable",
            "message": waiting.message,
            "reasons": reasons,
            "transitionID": transition,
            "lastTransitionTime": format_time(self.now()),
            "status": "True",
        }
        status["schedulingConditions"] = [c for c in conditions if c.get("nodePool") != NODE_POOL] + [condition]
        self.cluster.update_status("PodGroup", podgroup)
        self.event("PodGroup", waiting.podgroup_key, "Warning", "Unschedulable", waiting.message)

    def _pod_unschedulable(self, pod_key: str, message: str, mark: bool = True) -> None:
        """``PodScheduled=False/Unschedulable`` and a Warning event (the event only with markUnschedulable off)."""
        pod = self.cluster.get("Pod", pod_key)
        if pod is None:
            return
        if not mark:
            self.event("Pod", pod_key, "Warning", "Unschedulable", message)
            return
        status: dict[str, Any] = pod.setdefault("status", {})
        conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
        current = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        if current is not None and current.get("status") == "False" and current.get("message") == message:
            return
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastTransitionTime": format_time(self.now()),
        }
        status["conditions"] = [c for c in conditions if c.get("type") != "PodScheduled"] + [condition]
        self.cluster.update_status("Pod", pod)
        self.event("Pod", pod_key, "Warning", "Unschedulable", message)

    def event(self, kind: str, key: str, kind_of_event: str, reason: str, message: str) -> None:
        """A core/v1 Event about an object (what ``kubectl describe`` shows)."""
        namespace, _, name = key.rpartition("/")
        api_version = "scheduling.run.ai/v2alpha2" if kind == "PodGroup" else "v1"
        stamp = format_time(self.now())
        event: Raw = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{name}.{int(self.now() * 1e6):x}{next(self._sequence)}",
                "namespace": namespace or "default",
            },
            "involvedObject": {"apiVersion": api_version, "kind": kind, "name": name, "namespace": namespace},
            "reason": reason,
            "message": message,
            "type": kind_of_event,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": COMPONENT},
        }
        self.cluster.create("Event", event)
