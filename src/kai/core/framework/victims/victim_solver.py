"""Simulating one victim scenario (KAI's byPodSolver) and the partial job representatives it is run for.

A validator (fair share for reclaim, "everything moved" for consolidation) must accept the result. Nothing is
bound here: the preemptor is placed by allocate in a later cycle.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kai.core.framework.job_allocation import allocate_job
from kai.core.framework.queueing.job_index import JobIndex
from kai.core.framework.queueing.job_queue import JobQueueOptions, JobsOrderByQueues, order_key, queue_admits
from kai.core.framework.session import Session
from kai.core.framework.statement import Statement
from kai.core.framework.victims.scenario import Scenario
from kai.core.state.node_table import Mask
from kai.core.state.pod_status import ACTIVE_ALLOCATED, PodStatus
from kai.core.state.podgroup_info import PodGroupInfo, SubGroupSet
from kai.core.state.resource_index import GPU_ROW
from kai.core.state.task import TaskInfo

Validator = Callable[[Scenario], bool]
EvictionMessages = Callable[[list[TaskInfo], PodGroupInfo], list[tuple[str, str]]]
"""The eviction message (KAI's) and why (kai's audit) of each victim task for a preemptor, asked at a simulation's
start: the state of the last commit."""


@dataclass
class Solution:
    solved: bool
    statement: Statement | None = None
    victim_tasks: list[TaskInfo] = field(default_factory=list)
    victim_jobs: list[PodGroupInfo] = field(default_factory=list)


def feasible_nodes(ssn: Session, job: PodGroupInfo) -> Mask:
    """All nodes, unless every task of the job needs a GPU: then only nodes with idle or releasing GPUs."""
    nodes = ssn.nodes
    if any(task.request.is_cpu_only for task in job.tasks.values()):
        return np.ones(len(nodes), dtype=bool)
    mask: Mask = (nodes.idle[GPU_ROW] > 0) | (nodes.releasing[GPU_ROW] > 0)
    for column in nodes.shared_columns:
        info = nodes.infos[column]
        if any(0 < memory < info.gpu_memory_mib for memory in info.shared.allocated.values()):
            mask[column] = True
    return mask


def partial_job(job: PodGroupInfo, pending: list[TaskInfo]) -> PodGroupInfo:
    """The job as far as the solver has got: its placed tasks plus ``pending``, every gang size cut down to what
    the representative holds (pod sets to their pods, sets of sub-groups to their non-empty members)."""
    placed = [task for task in job.tasks.values() if task.status in ACTIVE_ALLOCATED]
    partial = job.clone_with_tasks(placed + pending)
    for pod_set in partial.pod_sets.values():
        if pod_set.tasks:
            pod_set.min_available = min(pod_set.min_available, len(pod_set.tasks))
    _cut_min_subgroups(partial.root)
    return partial


def _cut_min_subgroups(group: SubGroupSet) -> bool:
    """Cap each set's ``min_subgroup`` at its members that hold tasks; whether ``group`` holds any."""
    filled = sum(1 for pod_set in group.pod_sets if pod_set.tasks)
    filled += sum(1 for child in group.children if _cut_min_subgroups(child))
    if group.min_subgroup is not None:
        group.min_subgroup = min(group.min_subgroup, filled)
    return filled > 0


class ScenarioSolver:
    """Simulates one scenario (KAI's byPodSolver): its victims are evicted virtually, then the victims' jobs and the
    preemptor are re-placed in pipeline-only mode. The preemptor must fit whole; victims that fit again are moved
    (pipelined), the rest are real victims; the validator must accept the result."""

    def __init__(self, ssn: Session, validator: Validator | None, messages: EvictionMessages) -> None:
        self.ssn = ssn
        self.validator = validator
        self.messages = messages
        self.rejected = False
        """The last scenario was placeable but the validator refused it."""
        self.pending: JobIndex | None = None
        """The pending jobs as last committed (made at the first simulation, caught up before each)."""

    def solve(self, scenario: Scenario, feasible: Mask) -> Solution:
        self.rejected = False
        victims = scenario.recorded_tasks + scenario.potential_tasks
        if not victims:
            return Solution(False)
        ssn = self.ssn
        if self.pending is None:
            self.pending = JobIndex(ssn, PodGroupInfo.has_pending, worst_first=False, pool=ssn.pending_jobs())
        self.pending.sync()
        statement = Statement(ssn)
        self._evict(victims, scenario.preemptor, statement)
        nodes = feasible.copy()
        for task in victims:
            node = ssn.nodes.by_name.get(task.node_name)
            if node is not None:
                nodes[node.column] = True
        result = self._simulate(scenario, statement, nodes, victims)
        if result is None:
            statement.discard()
            return Solution(False)
        return result

    def _evict(self, tasks: list[TaskInfo], preemptor: PodGroupInfo, statement: Statement) -> None:
        messages = self.messages(tasks, preemptor)
        for task, (message, why) in zip(tasks, messages, strict=True):
            statement.evict(task, message, preemptor.key, why)

    def _simulate(
        self, scenario: Scenario, statement: Statement, feasible: Mask, victims: list[TaskInfo]
    ) -> Solution | None:
        if not self._place_virtually(scenario.preemptor, statement, feasible, victims):
            return None
        preempted = [t for t in victims if t.status is PodStatus.RELEASING]
        moved = [t for t in victims if t.status is PodStatus.PIPELINED]
        if self.validator is not None and not self.validator(scenario):
            self.rejected = True
            statement.discard()
            return Solution(False)
        victim_tasks = preempted + moved
        jobs: dict[int, PodGroupInfo] = {}
        for task in victim_tasks:
            group = scenario.representative_of(task)
            if group is not None:
                jobs.setdefault(id(group), group)
        return Solution(True, statement, victim_tasks, list(jobs.values()))

    def _place_virtually(
        self, preemptor: PodGroupInfo, statement: Statement, feasible: Mask, victims: list[TaskInfo]
    ) -> bool:
        """Re-place victims and the preemptor in job order, pipeline-only; the preemptor must fit."""
        ssn = self.ssn
        victim_jobs = [ssn.jobs[key] for key in dict.fromkeys(task.job_key for task in victims)]
        queue = self._queue_from_index(preemptor, victim_jobs) or self._queue(preemptor, victim_jobs)
        placed = False
        for job in queue.ordered([*victim_jobs, preemptor]):
            if job is preemptor:
                if not allocate_job(ssn, statement, job, True, feasible):
                    return False
                placed = True
            else:
                allocate_job(ssn, statement, job, True, feasible)
        return placed

    def _queue(self, preemptor: PodGroupInfo, victim_jobs: list[PodGroupInfo]) -> JobsOrderByQueues:
        """KAI's: every pending job (the victims' evicted pods that were pipelined are pending again), the victim
        jobs, the preemptor in its job's place."""
        jobs = {job.key: job for job in self.ssn.pending_jobs()}
        for job in victim_jobs:
            jobs[job.key] = job
        jobs[preemptor.key] = preemptor
        queue = JobsOrderByQueues(self.ssn, JobQueueOptions())
        queue.initialize(jobs)
        return queue

    def _queue_from_index(self, preemptor: PodGroupInfo, victim_jobs: list[PodGroupInfo]) -> JobsOrderByQueues | None:
        """The same queue from the pending jobs as last committed (``JobIndex``), when nothing but the victims'
        own pods changed since: no victim job is pending now (a pending victim job would be keyed anew where it
        stands, not pushed after the others), and the preemptor stands in for a pending job of the same order key.
        None otherwise."""
        ssn, index = self.ssn, self.pending
        assert index is not None
        known = index.keys.get(preemptor.key)
        if known is None or known != order_key(ssn, preemptor):
            return None
        if any(job.key in index.keys or job.has_pending() for job in victim_jobs):
            return None
        queue = index.queue(JobQueueOptions(), substitute=preemptor)
        for job in victim_jobs:
            if queue_admits(ssn, job):
                queue.push(job)
        return queue
