"""The parts of a cluster the simulator stands in for: kubelets and workload controllers.

Bound pods start running (``status.startTime`` is then); terminating pods finish and are re-created Pending by
their controller (unless their podgroup is being deleted, or they are stuck terminating: running pods deleted before
``stuck_before``), as scenario-format.md §4.2 describes. The scheduler's writer and the binder are the real
components; pods finishing their run time and jobs submitted again are ``lifecycle``'s, the pods a workload makes
``stand_ins``'s.
"""

from kai.cluster.memory import MemoryCluster, json_copy
from kai.core.model import names
from kai.core.model.meta import format_time, parse_time


def run_workload(cluster: MemoryCluster, podgroups_being_deleted: set[str], stuck_before: float, now: float) -> None:
    for stored in cluster.view("Pod"):
        meta, spec, status = stored["metadata"], stored.get("spec") or {}, stored.get("status") or {}
        if not meta.get("deletionTimestamp") and not (
            spec.get("nodeName") and status.get("phase") in (None, "Pending")
        ):
            continue  # most pods: nothing to do (the rest are copied before they change)
        pod = json_copy(stored)
        meta = pod["metadata"]
        spec = pod.setdefault("spec", {})
        status = pod.setdefault("status", {})
        key = f"{meta['namespace']}/{meta['name']}"
        podgroup = f"{meta['namespace']}/{meta.get('annotations', {}).get(names.POD_GROUP_ANNOTATION, '')}"
        if meta.get("deletionTimestamp"):
            if podgroup in podgroups_being_deleted:
                continue
            deleted = parse_time(meta["deletionTimestamp"], key, "metadata.deletionTimestamp")
            if status.get("phase") == "Running" and deleted < stuck_before:
                continue
            cluster.finalize("Pod", key)
            if meta.get("namespace") == names.RESERVATION_NAMESPACE:
                continue
            for field in ("deletionTimestamp", "resourceVersion"):
                meta.pop(field, None)
            meta.get("labels", {}).pop(names.GPU_GROUP_LABEL, None)
            meta.get("annotations", {}).pop(names.RECEIVED_RESOURCE_TYPE_ANNOTATION, None)
            spec.pop("nodeName", None)
            pod["status"] = {"phase": "Pending"}
            cluster.create("Pod", pod)
        elif spec.get("nodeName") and status.get("phase", "Pending") == "Pending":
            status["phase"] = "Running"
            status["startTime"] = format_time(now)
            cluster.update("Pod", pod)
