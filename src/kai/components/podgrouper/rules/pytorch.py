"""PyTorchJobs: one gang with a ``master`` and a ``worker`` sub-group, workers optionally in segments.

Gang size: every replica (as for other Kubeflow jobs), then ``spec.elasticPolicy.minReplicas``, then
``spec.runPolicy.schedulingPolicy.minAvailable`` — the last one given wins. The master sub-group holds the Master
replicas; the worker sub-group the rest of the gang. With ``kai.scheduler/segment-size`` S (on the pod or the Worker
template) the worker sub-group becomes a parent of segments ``worker-0``, ``worker-1``, … of S workers each (the
last one smaller); a worker joins segment ``replica-index // S``. Segments beyond the gang's workers are elastic
(``minMember: 0``). Segments take the ``kai.scheduler/segment-topology-*-placement`` annotations as their topology.
"""

from kai.components.podgrouper.rules import keys
from kai.components.podgrouper.rules.kubeflow import distributed
from kai.components.podgrouper.rules.model import Context, Grouping, Node, Obj, SubGroup, Workload, segment_topology
from kai.core.model.errors import InvalidObject

SPECS = "pytorchReplicaSpecs"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
MASTER, WORKER = "Master", "Worker"


def pytorch_job(workload: Workload, ctx: Context) -> Grouping:
    grouping = distributed(workload, ctx, SPECS)
    top = workload.top
    for path in (("elasticPolicy", "minReplicas"), ("runPolicy", "schedulingPolicy", "minAvailable")):
        value = top.get("spec", *path).integer()
        if value is not None:
            grouping.min_member = value
    specs = top.get("spec", SPECS)
    if not specs.present:
        raise specs.invalid("is required: the replica types of a PyTorchJob")
    role = workload.pod.labels.get(REPLICA_TYPE_LABEL, "")
    masters = specs.get(MASTER, "replicas").integer(0) or 0
    if MASTER in specs.mapping() and masters:
        grouping.subgroups.append(SubGroup("master", min_member=masters))
        if role == "master":
            grouping.pod_subgroup = "master"
    if WORKER in specs.mapping():
        _workers(grouping, workload, specs, max(0, grouping.min_member - masters), role == "worker")
    return grouping


def _workers(grouping: Grouping, workload: Workload, specs: Node, gang_workers: int, is_worker: bool) -> None:
    pod, top = workload.pod, workload.top
    template = specs.get(WORKER, "template")
    size = _segment_size(pod, template) or 0
    workers = specs.get(WORKER, "replicas").integer(1) or 0
    segments = -(-workers // size) if size else 0
    if segments <= 0:
        grouping.subgroups.append(SubGroup("worker", min_member=gang_workers))
        grouping.pod_subgroup = "worker" if is_worker else grouping.pod_subgroup
        return
    if segments > keys.MAX_SEGMENTS:
        raise template.invalid(
            f"segment size {size} makes {segments} segments of {workers} workers; at most {keys.MAX_SEGMENTS} allowed"
        )
    grouping.subgroups.append(SubGroup("worker", min_subgroup=segments))
    topology = segment_topology(pod, template, top)
    mandatory = -(-gang_workers // size)
    for i in range(segments):
        last = min(size, workers - i * size)
        grouping.subgroups.append(
            SubGroup(f"worker-{i}", min_member=last if i < mandatory else 0, parent="worker", topology=topology)
        )
    if is_worker:
        grouping.pod_subgroup = f"worker-{_replica_index(pod) // size}"


def _segment_size(pod: Obj, template: Node) -> int | None:
    on_pod = pod.annotations.get(keys.SEGMENT_SIZE, "")
    text, where = (on_pod, pod.ref) if on_pod else (template.annotation(keys.SEGMENT_SIZE), template.obj)
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        field = f"metadata.annotations[{keys.SEGMENT_SIZE}]"
        field = field if on_pod else f"{template.field}.{field}"
        raise InvalidObject(where, field, f"got {text!r}; expected an integer >= 1")
    return int(text)


def _replica_index(pod: Obj) -> int:
    text = pod.labels.get(REPLICA_INDEX_LABEL)
    field = f"metadata.labels[{REPLICA_INDEX_LABEL}]"
    if text is None:
        raise InvalidObject(pod.ref, field, "is required on a worker of a segmented PyTorchJob")
    if not text.isdigit():
        raise InvalidObject(pod.ref, field, f"got {text!r}; expected an integer >= 0")
    return int(text)
