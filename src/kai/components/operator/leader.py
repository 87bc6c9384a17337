"""The scheduler Service routed to the leader, as KAI's operator does (pkg/operator/operands/scheduler,
endpointSliceForShard): with more than one scheduler replica only the Lease holder schedules, so the shard's Service
has no selector and the operator keeps an EndpointSlice ``<service>-leader`` holding the holder's pod IP (empty while
there is no holder, or its pod has no IP or is going away). With one replica the Service selects its pod as usual
and the slice is not wanted.

The holder is named as KAI's components name themselves in the Lease: ``<pod name>_<uuid>``
(``kai.components.runtime.serve``); the operator reads the Lease and the pod at each pass, so the slice follows a
new leader within the operator's period.
"""

from typing import Any

from kai.components.operator.objects import labelled
from kai.components.operator.settings import Settings
from kai.components.operator.workloads import METRICS_PORT

Obj = dict[str, Any]
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
SLICE_MANAGED_BY = ("endpointslice.kubernetes.io/managed-by", "kai-operator")


def routed_to_leader(settings: Settings) -> bool:
    """More than one scheduler replica: they elect a leader, and the Service follows it."""
    return settings.services["scheduler"].replicas > 1


def lease_name(settings: Settings, shard: Obj) -> str:
    """The Lease a shard's schedulers campaign for (KAI's LeaseName): the scheduler name, with the shard's
    partition when it has one."""
    partition = str((shard.get("spec") or {}).get("partitionLabelValue") or "")
    return f"{settings.scheduler_name}-{partition}" if partition else settings.scheduler_name


def holder_pod_name(lease: Obj | None) -> str:
    """The pod holding ``lease`` ("" when none): the part of its holder identity before the first ``_``."""
    holder = str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")
    return holder.split("_", 1)[0]


def leader_slice(settings: Settings, service: str, leader: Obj | None) -> Obj:
    """The EndpointSlice of ``service`` holding ``leader``'s pod IP, ready; no endpoint when ``leader`` is None, has
    no IP yet or is being deleted."""
    obj = labelled("EndpointSlice", f"{service}-leader", service, settings.namespace)
    obj["metadata"]["labels"] |= {SERVICE_NAME_LABEL: service, SLICE_MANAGED_BY[0]: SLICE_MANAGED_BY[1]}
    obj["addressType"] = "IPv4"
    obj["ports"] = [{"name": "http-metrics", "port": METRICS_PORT, "protocol": "TCP"}]
    meta = (leader or {}).get("metadata") or {}
    ip = ((leader or {}).get("status") or {}).get("podIP") or ""
    endpoints = []
    if ip and not meta.get("deletionTimestamp"):
        reference = {
            "kind": "Pod",
            "namespace": settings.namespace,
            "name": meta.get("name", ""),
            "uid": meta.get("uid", ""),
        }
        endpoints.append({"addresses": [ip], "conditions": {"ready": True}, "targetRef": reference})
    obj["endpoints"] = endpoints
    return obj
