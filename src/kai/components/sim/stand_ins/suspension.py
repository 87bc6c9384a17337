"""What a workload's controller does when the workload is suspended and resumed (``spec.suspend``, or a Kubeflow job's
``spec.runPolicy.suspend``): its pods are deleted, and made again when it is resumed.

The simulator's stand-ins make a workload's pods once, at the start (or, for Jobs, as earlier ones end), so this
stand-in does the suspending for all of them: it takes the pods of every PodGroup whose workload is suspended off the
cluster (at once, as a controller's deletion of pods that then terminate), keeping them, and puts them back Pending
when the workload is no longer suspended. The Job stand-in makes nothing of a suspended Job meanwhile.
"""

from dataclasses import dataclass, field

from kai.cluster.memory import MemoryCluster, json_copy
from kai.cluster.port import Raw
from kai.core.model import names
from kai.core.model.suspension import SUSPEND_FIELDS, is_suspended
from kai.core.state.cluster_state import object_key


@dataclass
class SuspensionStandIn:
    kept: dict[str, list[Raw]] = field(default_factory=dict)
    """Per suspended workload (``kind namespace/name``), its pods as they were made, to make again."""

    def step(self, cluster: MemoryCluster) -> None:
        for podgroup in cluster.view("PodGroup"):
            owner = next(iter((podgroup.get("metadata") or {}).get("ownerReferences") or []), None)
            if not owner or (owner.get("apiVersion"), owner.get("kind")) not in SUSPEND_FIELDS:
                continue
            namespace = podgroup["metadata"].get("namespace", "")
            workload = cluster.peek(str(owner["kind"]), f"{namespace}/{owner['name']}")
            key = f"{owner['kind']} {namespace}/{owner['name']}"
            if workload is not None and is_suspended(owner["apiVersion"], owner["kind"], workload):
                self._suspend(cluster, podgroup, key)
            elif key in self.kept:
                for pod in self.kept.pop(key):
                    if cluster.peek("Pod", object_key(pod)) is None:
                        cluster.create("Pod", pod)

    def _suspend(self, cluster: MemoryCluster, podgroup: Raw, key: str) -> None:
        name = podgroup["metadata"]["name"]
        for pod in cluster.view("Pod"):
            meta = pod.get("metadata") or {}
            if meta.get("namespace") != podgroup["metadata"].get("namespace"):
                continue
            if (meta.get("annotations") or {}).get(names.POD_GROUP_ANNOTATION) != name:
                continue
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            self.kept.setdefault(key, []).append(_fresh(pod))
            cluster.finalize("Pod", object_key(pod))


def _fresh(pod: Raw) -> Raw:
    """The pod as its controller makes it again: Pending, on no node."""
    made: Raw = json_copy(pod)
    meta = made["metadata"]
    for key in ("deletionTimestamp", "resourceVersion"):
        meta.pop(key, None)
    (meta.get("labels") or {}).pop(names.GPU_GROUP_LABEL, None)
    (meta.get("annotations") or {}).pop(names.RECEIVED_RESOURCE_TYPE_ANNOTATION, None)
    made.setdefault("spec", {}).pop("nodeName", None)
    made["status"] = {"phase": "Pending"}
    return made
