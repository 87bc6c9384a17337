"""LeaderWorkerSets: one PodGroup per replica group (``pg-<lws>-<uid>-group-<index>``), a ``leader`` sub-group of one
and a ``workers`` sub-group of the rest.

Gang size: ``leaderWorkerTemplate.size``; with ``startupPolicy: LeaderReady`` only the leader until it is scheduled
(its workers are created once it is ready). With a segment size S (``subGroupPolicy.subGroupSize``, else the
``kai.scheduler/segment-size`` annotation of the LWS or of its worker template) the group is cut into segments
``segment-0``, … of S workers: with policy ``LeaderWorker`` (default) the leader belongs to the first segment (which
then holds a ``leader`` and a ``workers`` sub-group), with ``LeaderExcluded`` it has a sub-group of its own.
"""

from kai.components.podgrouper.rules import keys
from kai.components.podgrouper.rules.default import default_grouping
from kai.components.podgrouper.rules.model import Context, Grouping, Node, Obj, SubGroup, Workload, segment_topology
from kai.core.model.errors import InvalidObject

SIZE_ANNOTATION = "leaderworkerset.sigs.k8s.io/size"
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
LEADER, WORKERS = "leader", "workers"
POLICIES = ("LeaderWorker", "LeaderExcluded")


def leader_worker_set(workload: Workload, ctx: Context) -> Grouping:
    grouping = default_grouping(workload, ctx)
    lws, pod = workload.top, workload.pod
    size_field = lws.get("spec", "leaderWorkerTemplate", "size")
    size = size_field.integer()
    if size is None or size < 1:
        raise size_field.invalid(f"got {size}; a LeaderWorkerSet's group size must be at least 1")
    policy = lws.get("spec", "startupPolicy").text("LeaderCreated")
    index = _worker_index(pod)
    if policy == "LeaderReady":
        grouping.min_member = 1 if index == 0 and not pod.get("spec", "nodeName").text() else _pod_size(pod, size)
    elif policy == "LeaderCreated":
        grouping.min_member = size
    else:
        raise lws.get("spec", "startupPolicy").invalid(f"got {policy!r}; allowed: LeaderCreated, LeaderReady")
    _subgroups(grouping, lws, pod, index)
    group_index = pod.labels.get(GROUP_INDEX_LABEL, "")
    if group_index.isdigit():
        grouping.name = f"{grouping.name}-group-{int(group_index)}"
    return grouping


def _worker_index(pod: Obj) -> int | None:
    text = pod.labels.get(WORKER_INDEX_LABEL)
    if text is None:
        return None
    if not text.isdigit():
        raise InvalidObject(
            pod.ref, f"metadata.labels[{WORKER_INDEX_LABEL}]", f"got {text!r}; expected an integer >= 0"
        )
    return int(text)


def _pod_size(pod: Obj, size: int) -> int:
    text = pod.annotations.get(SIZE_ANNOTATION, "")
    return int(text) if text.isdigit() else size


def _subgroups(grouping: Grouping, lws: Obj, pod: Obj, index: int | None) -> None:
    gang = grouping.min_member
    template = lws.get("spec", "leaderWorkerTemplate", "workerTemplate")
    segment = _segment_size(lws, template, gang) if gang > 1 else None
    is_leader = index == 0
    if segment is None:
        grouping.subgroups.append(SubGroup(LEADER, min_member=1))
        if gang > 1:
            grouping.subgroups.append(SubGroup(WORKERS, min_member=gang - 1))
        grouping.pod_subgroup = LEADER if is_leader else (WORKERS if gang > 1 else "")
        return
    policy_field = lws.get("spec", "leaderWorkerTemplate", "subGroupPolicy", "subGroupPolicyType")
    policy = policy_field.text("LeaderWorker")
    if policy not in POLICIES:
        raise policy_field.invalid(f"got {policy!r}; allowed: {', '.join(POLICIES)}")
    workers = gang - 1
    divisible = workers % segment == 0
    if policy == "LeaderExcluded" and not divisible:
        raise policy_field.invalid(
            f"LeaderExcluded needs the {workers} workers to divide into segments of {segment}; they do not"
        )
    count = _segment_of(workers, segment, divisible) + 1
    if count > keys.MAX_SEGMENTS:
        raise policy_field.invalid(
            f"segment size {segment} makes {count} segments; at most {keys.MAX_SEGMENTS} allowed"
        )
    topology = segment_topology(pod, template, lws)
    sizes = [0] * count
    for worker in range(1, workers + 1):
        sizes[_segment_of(worker, segment, divisible)] += 1
    segments = [SubGroup(f"segment-{i}", min_member=n, topology=topology) for i, n in enumerate(sizes)]
    if index is None:
        raise InvalidObject(pod.ref, f"metadata.labels[{WORKER_INDEX_LABEL}]", "is required on a segmented LWS pod")
    own = _segment_of(index, segment, divisible)
    if policy == "LeaderExcluded":
        grouping.subgroups = [SubGroup(LEADER, min_member=1), *segments]
        grouping.pod_subgroup = LEADER if is_leader else segments[own].name
        return
    first = segments[0]
    leader_workers = first.min_member or 0
    first.min_member, first.min_subgroup = None, 2
    grouping.subgroups = [
        *segments,
        SubGroup(LEADER, min_member=1, parent=first.name),
        SubGroup(WORKERS, min_member=leader_workers, parent=first.name),
    ]
    grouping.pod_subgroup = LEADER if is_leader else (WORKERS if own == 0 else segments[own].name)


def _segment_of(worker: int, segment: int, divisible: bool) -> int:
    """The segment of a worker index (0 is the leader, always in the first): when the workers divide evenly the
    leader is an extra member of the first segment, otherwise it takes one of its places."""
    if worker == 0:
        return 0
    return (worker - 1) // segment if divisible else worker // segment


def _segment_size(lws: Obj, template: Node, gang: int) -> int | None:
    policy = lws.get("spec", "leaderWorkerTemplate", "subGroupPolicy", "subGroupSize")
    size = policy.integer()
    where = policy
    if size is None:
        on_lws = lws.get("metadata", "annotations", keys.SEGMENT_SIZE)
        for node in (on_lws, template.get("metadata", "annotations", keys.SEGMENT_SIZE)):
            text = node.text()
            if node.present:
                if not text.isdigit():
                    raise node.invalid(f"got {text!r}; expected an integer > 1")
                size, where = int(text), node
                break
    if size is None:
        return None
    if size <= 1 or size > gang:
        raise where.invalid(f"got {size}; a segment size must be more than 1 and at most the group size {gang}")
    return size
