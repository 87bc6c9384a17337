"""A grouping as a PodGroup object, and how an existing PodGroup is brought to it (KAI's ``podgroup.Handler``).

An update never changes what others own: the queue (a PodGroup never moves between queues), ``markUnschedulable``,
``schedulingBackoff``, the node-pool and queue labels already there, and a topology constraint set by someone else
when the workload names none. Labels and annotations are added or changed, never removed.
"""

import copy
from collections.abc import Mapping
from typing import Any

from kai.cluster.port import Raw
from kai.components.podgrouper.rules.model import Grouping, SubGroup, Topology

API_VERSION = "scheduling.run.ai/v2alpha2"
KEPT_SPEC_FIELDS = ("queue", "markUnschedulable", "schedulingBackoff")


def podgroup_object(grouping: Grouping) -> Raw:
    spec: Raw = {}
    if grouping.min_subgroup is not None:
        spec["minSubGroup"] = grouping.min_subgroup
    else:
        spec["minMember"] = grouping.min_member
    optional: dict[str, Any] = {
        "queue": grouping.queue,
        "priorityClassName": grouping.priority_class,
        "preemptibility": grouping.preemptibility,
        "topologyConstraint": _topology(grouping.topology),
        "subGroups": [_subgroup(s) for s in grouping.subgroups],
        "preemptionDelay": grouping.preemption_delay,
        "stalenessGracePeriod": grouping.staleness_grace_period,
    }
    spec.update((key, value) for key, value in optional.items() if value)
    return {
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "metadata": {
            "name": grouping.name,
            "namespace": grouping.namespace,
            "labels": dict(grouping.labels),
            "annotations": dict(grouping.annotations),
            "ownerReferences": [dict(grouping.owner)],
        },
        "spec": spec,
    }


def _topology(topology: Topology | None) -> Raw:
    if not topology:
        return {}
    fields = (
        ("topology", topology.topology),
        ("requiredTopologyLevel", topology.required),
        ("preferredTopologyLevel", topology.preferred),
    )
    return {key: value for key, value in fields if value}


def _subgroup(sub: SubGroup) -> Raw:
    raw: Raw = {"name": sub.name}
    if sub.min_subgroup is not None:
        raw["minSubGroup"] = sub.min_subgroup
    else:
        raw["minMember"] = sub.min_member or 0
    if sub.parent:
        raw["parent"] = sub.parent
    if sub.topology:
        raw["topologyConstraint"] = _topology(sub.topology)
    return raw


def updated(existing: Mapping[str, Any], desired: Raw, node_pool_label: str, queue_label: str) -> Raw | None:
    """``existing`` changed to match ``desired`` (a ``podgroup_object``), or None when it already does."""
    old_meta: Mapping[str, Any] = existing.get("metadata") or {}
    old_spec: Mapping[str, Any] = existing.get("spec") or {}
    old_labels: Mapping[str, str] = old_meta.get("labels") or {}
    old_annotations: Mapping[str, str] = old_meta.get("annotations") or {}
    spec = dict(desired["spec"])
    for key in KEPT_SPEC_FIELDS:
        _keep(spec, old_spec, key)
    if not spec.get("topologyConstraint", {}).get("topology"):
        _keep(spec, old_spec, "topologyConstraint")
    labels = dict(desired["metadata"]["labels"])
    _keep(labels, old_labels, node_pool_label)
    if queue_label in old_labels:
        labels[queue_label] = old_labels[queue_label]
    annotations = desired["metadata"]["annotations"]
    owners = desired["metadata"]["ownerReferences"]
    if (
        spec == old_spec
        and owners == old_meta.get("ownerReferences")
        and labels.items() <= old_labels.items()
        and annotations.items() <= old_annotations.items()
    ):
        return None
    result = copy.deepcopy(dict(existing))
    meta = result.setdefault("metadata", {})
    meta["labels"] = {**old_labels, **labels}
    meta["annotations"] = {**old_annotations, **annotations}
    meta["ownerReferences"] = owners
    result["spec"] = spec
    return result


def _keep(new: dict[str, Any], old: Mapping[str, Any], key: str) -> None:
    """``new[key]`` as it is in ``old`` (absent when absent there)."""
    if key in old:
        new[key] = old[key]
    else:
        new.pop(key, None)
