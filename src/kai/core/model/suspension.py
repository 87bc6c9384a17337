"""Suspend instead of delete (KAI #1386): which workloads can be suspended, and the record of a suspended
workload's pods.

A workload with a ``suspend`` field is evicted by setting it: its controller then deletes its pods, and creates them
again once it is unsuspended. While it is suspended it has no pods, so the scheduler keeps what they were on its
PodGroup (``kai.scheduler/suspended-pods``: each distinct pod once, with how many there were) and schedules stand-ins
made from that record as the workload's pending pods: when they fit, the scheduler resumes the workload, and the
stand-ins hold their room until its real pods are back.
"""

import json
from collections.abc import Iterable, Mapping
from typing import Any

from kai.core.model import names
from kai.core.model.meta import Raw

SUSPEND_FIELDS: Mapping[tuple[str, str], tuple[str, ...]] = {
    ("batch/v1", "Job"): ("spec", "suspend"),
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): ("spec", "suspend"),
    ("ray.io/v1", "RayJob"): ("spec", "suspend"),
    ("ray.io/v1", "RayCluster"): ("spec", "suspend"),
    ("kubeflow.org/v1", "PyTorchJob"): ("spec", "runPolicy", "suspend"),
    ("kubeflow.org/v1", "TFJob"): ("spec", "runPolicy", "suspend"),
    ("kubeflow.org/v1", "XGBoostJob"): ("spec", "runPolicy", "suspend"),
    ("kubeflow.org/v1", "JAXJob"): ("spec", "runPolicy", "suspend"),
    ("kubeflow.org/v1", "MPIJob"): ("spec", "runPolicy", "suspend"),
}
"""(apiVersion, kind) of each workload kind that has a ``suspend`` field, and its path. LeaderWorkerSet has none
(its API offers no suspend), nor do Deployments and StatefulSets: their pods are deleted."""
STAND_IN_MARK = "~suspended-"
"""In a stand-in pod's name (``<podgroup>~suspended-<i>``): a character no real pod name has."""
_SPEC_FIELDS = (
    "schedulerName",
    "priorityClassName",
    "nodeSelector",
    "affinity",
    "tolerations",
    "overhead",
    "resourceClaims",
    "hostNetwork",
)


def suspend_patch(api_version: str, kind: str, suspend: bool) -> dict[str, Any] | None:
    """The merge patch that sets the workload's ``suspend`` field; None for a kind without one."""
    path = SUSPEND_FIELDS.get((api_version, kind))
    if path is None:
        return None
    patch: dict[str, Any] = {path[-1]: suspend}
    for key in reversed(path[:-1]):
        patch = {key: patch}
    return patch


def is_suspended(api_version: str, kind: str, obj: Mapping[str, Any]) -> bool:
    path = SUSPEND_FIELDS.get((api_version, kind), ())
    value: Any = obj
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value is True


def record(pods: Iterable[Mapping[str, Any]]) -> str:
    """The record of a workload's pods: each distinct pod (what scheduling reads of it) with its count."""
    shapes: dict[str, int] = {}
    for pod in pods:
        shape = json.dumps(_shape(pod), sort_keys=True, separators=(",", ":"))
        shapes[shape] = shapes.get(shape, 0) + 1
    return json.dumps([{"count": count, "pod": json.loads(shape)} for shape, count in shapes.items()])


def _shape(pod: Mapping[str, Any]) -> Raw:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    containers = [
        {"name": c.get("name", ""), "resources": c.get("resources") or {}}
        for c in spec.get("containers") or []
        if isinstance(c, Mapping)
    ]
    init = [
        {"name": c.get("name", ""), "resources": c.get("resources") or {}, "restartPolicy": c.get("restartPolicy")}
        for c in spec.get("initContainers") or []
        if isinstance(c, Mapping)
    ]
    kept = {key: spec[key] for key in _SPEC_FIELDS if spec.get(key) is not None}
    return {
        "metadata": {"labels": dict(meta.get("labels") or {}), "annotations": dict(meta.get("annotations") or {})},
        "spec": {**kept, "containers": containers, **({"initContainers": init} if init else {})},
    }


def stand_ins(podgroup: Mapping[str, Any], text: str) -> list[Raw]:
    """Pending pods made from a PodGroup's record (none when it cannot be read: the workload then waits to be
    unsuspended by hand, as any suspended workload does)."""
    meta = podgroup.get("metadata") or {}
    name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
    try:
        entries = json.loads(text)
    except ValueError:
        return []
    made: list[Raw] = []
    for entry in entries if isinstance(entries, list) else []:
        pod = entry.get("pod") if isinstance(entry, Mapping) else None
        count = entry.get("count") if isinstance(entry, Mapping) else None
        if not isinstance(pod, Mapping) or not isinstance(count, int):
            continue
        for _ in range(max(0, count)):
            index = len(made)
            pod_meta = pod.get("metadata") or {}
            annotations = {**(pod_meta.get("annotations") or {}), names.POD_GROUP_ANNOTATION: name}
            made.append(
                {
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{name}{STAND_IN_MARK}{index}",
                        "namespace": namespace,
                        "uid": f"{meta.get('uid', name)}{STAND_IN_MARK}{index}",
                        "creationTimestamp": meta.get("creationTimestamp"),
                        "labels": dict(pod_meta.get("labels") or {}),
                        "annotations": annotations,
                    },
                    "spec": dict(pod.get("spec") or {}),
                    "status": {"phase": "Pending"},
                }
            )
    return made


def is_stand_in(pod_key: str) -> bool:
    return STAND_IN_MARK in pod_key
