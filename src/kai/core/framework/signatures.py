"""Scheduling signatures (KAI's minimal_job_comparison): skip a pending job that cannot be easier to place than one
with the same constraints that already failed in this action.

Two jobs share a signature when their pods share node selectors and affinity, tolerations, priority class, host
ports and pod affinity, and their pod sets share topology constraints. Among those, a job is tried only if it asks
for strictly less in some pod (resource vectors compared in sorted order) or has fewer pending pods.
"""

from collections.abc import Hashable
from operator import le

from kai.core.state.pod_status import PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.resource_index import GPU_ROW
from kai.core.state.task import TaskInfo


def _pod_signature(task: TaskInfo) -> Hashable:
    pod = task.pod
    return (pod.node_affinity.key, pod.tolerations.key, pod.priority_class_name, pod.host_ports, pod.pod_affinity)


def job_signature(job: PodGroupInfo) -> Hashable:
    sets = []
    for pod_set in job.pod_sets.values():
        pods = sorted({repr(_pod_signature(t)) for t in pod_set.tasks.values()})
        sets.append((repr(pod_set.topology), tuple(pods)))
    return (repr(job.root.topology), tuple(sorted(sets)))


Requests = list[tuple[float, ...]]
"""A job's pending pods' resource vectors (GPUs as quota plus GPU memory), sorted."""


def _requests(job: PodGroupInfo) -> Requests:
    vectors = []
    for task in job.tasks.values():
        if task.status is PodStatus.PENDING:
            vec = task.req_vec.copy()
            vec[GPU_ROW] = task.gpus_quota + task.request.gpu_memory_mib
            vectors.append(tuple(vec.tolist()))
    return sorted(vectors)


def _less_equal(left: tuple[float, ...], right: tuple[float, ...]) -> bool:
    return all(map(le, left, right))


def easier(mine: Requests, theirs: Requests) -> bool:
    if not mine or not theirs:
        return False
    if len(theirs) > len(mine):
        return True
    for index, vec in enumerate(mine):
        if index >= len(theirs):
            return False
        if _less_equal(vec, theirs[index]):
            if _less_equal(theirs[index], vec):
                continue
            return True
    return False


def _smaller_footprint(mine: Requests, theirs: Requests) -> bool:
    if not mine or not theirs or len(mine) > len(theirs):
        return False
    return all(_less_equal(vec, theirs[i]) for i, vec in enumerate(mine))


class Footprints:
    """Each job's signature and pending requests, worked out once per session, the requests again once a task of
    the job changes status (``status_version``): every evicting action compares its pending jobs with the same
    few failed ones, and at 2,000 waiting jobs working them out at each comparison was a tenth of a cycle."""

    def __init__(self) -> None:
        self._signatures: dict[int, tuple[PodGroupInfo, Hashable]] = {}
        self._requests: dict[int, tuple[PodGroupInfo, int, Requests]] = {}

    def signature(self, job: PodGroupInfo) -> Hashable:
        known = self._signatures.get(id(job))
        if known is None or known[0] is not job:
            known = self._signatures[id(job)] = (job, job_signature(job))
        return known[1]

    def requests(self, job: PodGroupInfo) -> Requests:
        known = self._requests.get(id(job))
        if known is None or known[0] is not job or known[1] != job.status_version:
            known = self._requests[id(job)] = (job, job.status_version, _requests(job))
        return known[2]


class MinimalFailedJobs:
    """The smallest failed job per signature; a later job of that signature is tried only if it is easier."""

    def __init__(self, footprints: Footprints) -> None:
        self.footprints = footprints
        self.representatives: dict[Hashable, PodGroupInfo] = {}

    def no_easier_than(self, job: PodGroupInfo) -> PodGroupInfo | None:
        """The failed job ``job`` is no easier to place than (None when it is worth trying)."""
        footprints = self.footprints
        representative = self.representatives.get(footprints.signature(job))
        if representative is None or easier(footprints.requests(job), footprints.requests(representative)):
            return None
        return representative

    def failed(self, job: PodGroupInfo) -> None:
        footprints = self.footprints
        key = footprints.signature(job)
        current = self.representatives.get(key)
        if current is None or _smaller_footprint(footprints.requests(job), footprints.requests(current)):
            self.representatives[key] = job
