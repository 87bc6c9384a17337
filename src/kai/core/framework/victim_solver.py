"""Simulating one victim scenario (KAI's byPodSolver) and the partial job representatives it is run for.

A validator (fair share for reclaim, "everything moved" for consolidation) must accept the result. Nothing is
bound here: the preemptor is placed by allocate in a later cycle.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kai.core.framework.job_allocation import allocate_job
from kai.core.framework.job_queue import JobQueueOptions, JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.framework.statement import Statement
from kai.core.framework.victims import Scenario
from kai.core.state.node_table import Mask
from kai.core.state.pod_status import ACTIVE_ALLOCATED, PodStatus
from kai.core.state.podgroup_info import PodGroupInfo, SubGroupSet
from kai.core.state.resource_index import GPU_ROW
from kai.core.state.task import TaskInfo

Validator = Callable[[Scenario], bool]
EvictionMessages = Callable[[list[TaskInfo], PodGroupInfo], list[str]]
"""The eviction message of each victim task for a preemptor, all computed in one state (a simulation's start)."""


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

    def solve(self, scenario: Scenario, feasible: Mask) -> Solution:
        self.rejected = False
        victims = scenario.recorded_tasks + scenario.potential_tasks
        if not victims:
            return Solution(False)
        ssn = self.ssn
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
        for task, message in zip(tasks, messages, strict=True):
            statement.evict(task, message, preemptor.key)

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
        victim_jobs = {task.job_key for task in victims}
        jobs = {job.key: job for job in ssn.pending_jobs()}
        for key in victim_jobs:
            jobs[key] = ssn.jobs[key]
        jobs[preemptor.key] = preemptor
        queue = JobsOrderByQueues(ssn, JobQueueOptions())
        queue.initialize(jobs)
        placed = False
        for job in queue.ordered({*victim_jobs, preemptor.key}):
            if job is preemptor:
                if not allocate_job(ssn, statement, job, True, feasible):
                    return False
                placed = True
            else:
                allocate_job(ssn, statement, job, True, feasible)
        return placed
