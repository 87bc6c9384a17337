"""Knative Services: the pods of one Revision are one gang of ``autoscaling.knative.dev/min-scale`` (default 1)
pods, ``pg-<revision>-<uid>``, with the ``inference`` priority class by default.

Without gang scheduling (``--knative-gang-schedule=false``), and for a revision whose pods already have PodGroups of
their own (made that way before), every pod is its own PodGroup with the ``inference`` priority class.
"""

from kai.components.podgrouper.rules import keys
from kai.components.podgrouper.rules.default import (
    podgroup_annotations,
    podgroup_labels,
    podgroup_name,
    priority_class,
    queue,
)
from kai.components.podgrouper.rules.model import Context, Grouping, Obj, Workload
from kai.core.model import names
from kai.core.model.errors import InvalidObject

REVISION_LABEL = "serving.knative.dev/revision"
MIN_SCALE_ANNOTATION = "autoscaling.knative.dev/min-scale"


def knative_service(workload: Workload, ctx: Context) -> Grouping:
    pod = workload.pod
    name = pod.labels.get(REVISION_LABEL)
    if not name:
        raise InvalidObject(pod.ref, f"metadata.labels[{REVISION_LABEL}]", "is required on a Knative Service's pod")
    revision = ctx.lookup.get("serving.knative.dev/v1", "Revision", pod.namespace, name)
    if revision is None:
        raise InvalidObject(
            pod.ref, f"metadata.labels[{REVISION_LABEL}]", f"names Revision {name}, which does not exist"
        )
    grouping = Grouping(
        name=podgroup_name(pod),
        namespace=pod.namespace,
        owner=pod.reference() | {"apiVersion": "v1", "kind": "Pod"},
        labels=podgroup_labels(revision, pod),
        annotations=podgroup_annotations(revision, pod),
        queue=queue(revision, pod, ctx),
        priority_class=keys.INFERENCE,
    )
    if not ctx.settings.knative_gang_schedule or _pod_per_group(revision, ctx):
        return grouping
    min_scale = revision.annotations.get(MIN_SCALE_ANNOTATION, "1")
    grouping.name = podgroup_name(revision)
    grouping.namespace = revision.namespace
    grouping.owner = revision.reference()
    grouping.min_member = int(min_scale) if min_scale.isdigit() else 1
    grouping.priority_class = priority_class((revision,), pod, ctx, keys.INFERENCE, grouping.warnings)
    return grouping


def _pod_per_group(revision: Obj, ctx: Context) -> bool:
    """Whether the revision's pods were grouped one by one (KAI's backward compatibility): two of them in one
    PodGroup mean a gang; several PodGroups, or a single one owned by a pod, mean one per pod."""
    groups: set[str] = set()
    for pod in ctx.lookup.pods(revision.namespace, {REVISION_LABEL: revision.name}):
        group = pod.annotations.get(names.POD_GROUP_ANNOTATION)
        if group is None:
            continue
        if group in groups:
            return False
        groups.add(group)
    if len(groups) != 1:
        return len(groups) > 1
    podgroup = ctx.lookup.get("scheduling.run.ai/v2alpha2", "PodGroup", revision.namespace, groups.pop())
    if podgroup is None:
        return False
    owners = podgroup.owner_refs
    if not owners:
        raise InvalidObject(podgroup.ref, "metadata.ownerReferences", "is required on a Knative revision's PodGroup")
    kind = owners[0].get("kind").text()
    if kind not in (revision.kind, "Pod"):
        raise owners[0].get("kind").invalid(f"got {kind!r}; a Knative revision's PodGroup is owned by it or a pod")
    return kind == "Pod"
