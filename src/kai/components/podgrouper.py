"""A first pod-grouper: every kai-scheduler pod without a PodGroup gets one (KAI's default and pod-job groupers).

The PodGroup is named after the pod's top owner (``pg-<owner>-<uid>``, the pod itself when it has no owner), has
gang size 1, the queue from the ``kai.scheduler/queue`` label (owner's, then pod's; else ``default-queue``) and the
priority class from the ``priorityClassName`` label or the pod's own class when it exists (else ``train``); the
pod's ``kai.scheduler/preemption-delay`` and ``kai.scheduler/staleness-grace-period`` annotations become the
PodGroup's ``preemptionDelay`` and ``stalenessGracePeriod`` (an invalid value is logged and ignored, as in KAI).
Then the pod is annotated with the PodGroup's name. Workload-specific groupers (Jobs, PyTorchJobs, RayClusters…)
come later.
"""

import logging
from typing import Any

from kai.cluster.port import ClusterClient, Raw
from kai.components.parallel import Writes
from kai.core.model import names
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject

log = logging.getLogger(__name__)

DEFAULT_QUEUE = "default-queue"
DEFAULT_PRIORITY_CLASS = "train"
PREEMPTIBILITY_LABEL = "kai.scheduler/preemptibility"


def podgroup_for(pod: Raw, priority_classes: set[str], queue_label: str = names.QUEUE_LABEL) -> Raw:
    meta: dict[str, Any] = pod["metadata"]
    owners = meta.get("ownerReferences") or []
    owner = owners[0] if owners else {"name": meta["name"], "uid": meta.get("uid", meta["name"]), "kind": "Pod"}
    labels: dict[str, str] = meta.get("labels") or {}
    spec: dict[str, Any] = {
        "minMember": 1,
        "queue": labels.get(queue_label) or labels.get("project") or DEFAULT_QUEUE,
        "priorityClassName": _priority_class(pod, priority_classes),
    }
    if labels.get(PREEMPTIBILITY_LABEL) in ("preemptible", "non-preemptible"):
        spec["preemptibility"] = labels[PREEMPTIBILITY_LABEL]
    annotations: dict[str, str] = meta.get("annotations") or {}
    for annotation, key, allow_negative in (
        (names.PREEMPTION_DELAY_ANNOTATION, "preemptionDelay", False),
        (names.STALENESS_GRACE_ANNOTATION, "stalenessGracePeriod", True),
    ):
        text = annotations.get(annotation)
        if text is None:
            continue
        if _valid_duration(text, allow_negative):
            spec[key] = text
        else:
            allowed = "a Go duration such as 30s or 5m" + ("" if allow_negative else ", not negative")
            log.warning(
                "pod %s/%s: ignoring annotation %s=%r: expected %s",
                meta["namespace"],
                meta["name"],
                annotation,
                text,
                allowed,
            )
    podgroup: Raw = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {
            "name": f"pg-{owner['name']}-{owner.get('uid', '')}".rstrip("-")[:253],
            "namespace": meta["namespace"],
            "labels": {queue_label: spec["queue"]},
        },
        "spec": spec,
    }
    if owners:
        podgroup["metadata"]["ownerReferences"] = [dict(owner)]
    elif meta.get("uid"):
        podgroup["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}
        ]
    return podgroup


def _valid_duration(text: str, allow_negative: bool) -> bool:
    try:
        seconds = parse_duration(text, "Pod", "metadata.annotations")
    except InvalidObject:
        return False
    return allow_negative or seconds >= 0


def _priority_class(pod: Raw, priority_classes: set[str]) -> str:
    labels = pod["metadata"].get("labels") or {}
    for candidate in (labels.get("priorityClassName"), (pod.get("spec") or {}).get("priorityClassName")):
        if candidate and candidate in priority_classes:
            return str(candidate)
    return DEFAULT_PRIORITY_CLASS


class PodGrouper:
    def __init__(
        self, cluster: ClusterClient, scheduler_name: str = names.SCHEDULER_NAME, writes: Writes | None = None
    ) -> None:
        self.cluster = cluster
        self.scheduler_name = scheduler_name
        self.writes = writes or Writes()

    def reconcile(self) -> int:
        """Group every ungrouped pod of this scheduler; returns how many pods were annotated."""
        classes = {pc["metadata"]["name"] for pc in self.cluster.list("PriorityClass")}
        ungrouped = [
            pod
            for pod in self.cluster.list("Pod")
            if (pod.get("spec") or {}).get("schedulerName") == self.scheduler_name
            and not (pod["metadata"].get("annotations") or {}).get(names.POD_GROUP_ANNOTATION)
            and not pod["metadata"].get("deletionTimestamp")
        ]
        return self.writes.each("group pod", ungrouped, lambda pod: self._group(pod, classes))

    def _group(self, pod: Raw, classes: set[str]) -> None:
        meta = pod["metadata"]
        podgroup = podgroup_for(pod, classes)
        key = f"{meta['namespace']}/{podgroup['metadata']['name']}"
        if self.cluster.get("PodGroup", key) is None:
            self.cluster.create("PodGroup", podgroup)
        meta.setdefault("annotations", {})[names.POD_GROUP_ANNOTATION] = podgroup["metadata"]["name"]
        self.cluster.update("Pod", pod)
