"""JobSets: one PodGroup per JobSet, with a parent sub-group per replicated job and a leaf per replica of it.

The PodGroup needs ``minSubGroup`` replicated jobs: 1 when they start one after the other
(``startupPolicy.startupPolicyOrder: InOrder``), else all of them; the JobSet's ``kai.scheduler/batch-min-member``
lowers that. A replicated job ``r`` needs all its replicas (``minSubGroup``); replica ``i`` is the leaf ``r-replica-i``
of ``parallelism`` pods (or the template's ``kai.scheduler/batch-min-member``), with the topology of the template's
annotations. Pods are placed by their ``jobset.sigs.k8s.io/replicatedjob-name`` and ``job-index`` labels.
"""

from kai.components.podgrouper.rules import keys
from kai.components.podgrouper.rules.batch import min_member_override
from kai.components.podgrouper.rules.default import default_grouping
from kai.components.podgrouper.rules.model import Context, Grouping, Node, Obj, SubGroup, Workload, template_topology
from kai.core.model.errors import InvalidObject

REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"


def jobset(workload: Workload, ctx: Context) -> Grouping:
    top, pod = workload.top, workload.pod
    if not top.uid:
        raise InvalidObject(top.ref, "metadata.uid", "is required to name the JobSet's PodGroup")
    replicated = top.get("spec", "replicatedJobs").items()
    if not replicated:
        raise top.get("spec", "replicatedJobs").invalid("is required: a JobSet needs at least one replicated job")
    grouping = default_grouping(workload, ctx)
    grouping.min_subgroup = _required_jobs(top, len(replicated))
    for job in replicated:
        name = job.get("name").text()
        if not name:
            raise job.get("name").invalid("is required")
        replicas = job.get("replicas").integer(1) or 0
        template = job.get("template")
        leaf = _leaf_min_member(template)
        topology = template_topology(template, keys.TOPOLOGY_REQUIRED, keys.TOPOLOGY_PREFERRED)
        grouping.subgroups.append(SubGroup(name, min_subgroup=replicas))
        grouping.subgroups += [
            SubGroup(f"{name}-replica-{i}", min_member=leaf, parent=name, topology=topology) for i in range(replicas)
        ]
    grouping.pod_subgroup = _pod_leaf(pod, grouping)
    return grouping


def _required_jobs(top: Obj, count: int) -> int:
    override = min_member_override(top)
    if override is not None:
        return min(override, count)
    order = top.get("spec", "startupPolicy", "startupPolicyOrder").text("AnyOrder")
    return 1 if order == "InOrder" else count


def _leaf_min_member(template: Node) -> int:
    annotation = template.get("metadata", "annotations", keys.MIN_MEMBER_ANNOTATION)
    text = annotation.text()
    if annotation.present:
        if not text.isdigit() or int(text) < 1:
            raise annotation.invalid(f"got {text!r}; expected an integer >= 1")
        return int(text)
    return template.get("spec", "parallelism").integer(1) or 0


def _pod_leaf(pod: Obj, grouping: Grouping) -> str:
    for label in (REPLICATED_JOB_LABEL, JOB_INDEX_LABEL):
        if not pod.labels.get(label):
            raise InvalidObject(pod.ref, f"metadata.labels[{label}]", "is required on a JobSet's pod")
    leaf = f"{pod.labels[REPLICATED_JOB_LABEL]}-replica-{pod.labels[JOB_INDEX_LABEL]}"
    if grouping.subgroup(leaf) is None:
        raise InvalidObject(
            pod.ref, f"metadata.labels[{JOB_INDEX_LABEL}]", f"names replica {leaf!r}, which the JobSet does not have"
        )
    return leaf
