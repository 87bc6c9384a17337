"""Scheduling signatures (KAI's minimal_job_comparison): skip a pending job that cannot be easier to place than one
with the same constraints that already failed in this action.

Two jobs share a signature when their pods share node selectors and affinity, tolerations, priority class, host
ports and pod affinity, and their pod sets share topology constraints. Among those, a job is tried only if it asks
for strictly less in some pod (resource vectors compared in sorted order) or has fewer pending pods.
"""

from collections.abc import Hashable

import numpy as np

from kai.core.state.pod_status import PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.resource_index import GPU_ROW, Vector
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


def _requests(job: PodGroupInfo) -> list[Vector]:
    vectors = []
    for task in job.tasks.values():
        if task.status is PodStatus.PENDING:
            vec = task.req_vec.copy()
            vec[GPU_ROW] = task.gpus_quota + task.request.gpu_memory_mib
            vectors.append(vec)
    return sorted(vectors, key=lambda v: tuple(v))


def _less_equal(left: Vector, right: Vector) -> bool:
    return bool(np.all(left <= right))


def easier(job: PodGroupInfo, than: PodGroupInfo) -> bool:
    mine, theirs = _requests(job), _requests(than)
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


def _smaller_footprint(job: PodGroupInfo, than: PodGroupInfo) -> bool:
    mine, theirs = _requests(job), _requests(than)
    if not mine or not theirs or len(mine) > len(theirs):
        return False
    return all(_less_equal(vec, theirs[i]) for i, vec in enumerate(mine))


class MinimalFailedJobs:
    """The smallest failed job per signature; a later job of that signature is tried only if it is easier."""

    def __init__(self) -> None:
        self.representatives: dict[Hashable, PodGroupInfo] = {}

    def no_easier_than(self, job: PodGroupInfo) -> PodGroupInfo | None:
        """The failed job ``job`` is no easier to place than (None when it is worth trying)."""
        representative = self.representatives.get(job_signature(job))
        return None if representative is None or easier(job, representative) else representative

    def failed(self, job: PodGroupInfo) -> None:
        key = job_signature(job)
        current = self.representatives.get(key)
        if current is None or _smaller_footprint(job, current):
            self.representatives[key] = job
