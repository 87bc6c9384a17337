"""Finding victims for a pending job (KAI's JobSolver and byPodSolver), shared by reclaim, preempt, consolidation.

The job's tasks are solved one more at a time. For each step, scenarios grow victim job by victim job; a scenario
is simulated node by node: the victims on that node (plus those already recorded) are evicted virtually, then the
victims and the preemptor are re-placed in pipeline-only mode. The preemptor must fit whole; victims that fit again
are moved (pipelined), the rest are real victims. A validator (fair share for reclaim, "everything moved" for
consolidation) must accept the result. Nothing is bound here: the preemptor is placed by allocate in a later cycle.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kai.core.framework.job_allocation import allocate_job, tasks_to_allocate
from kai.core.framework.job_queue import JobQueueOptions, JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.framework.statement import Statement
from kai.core.framework.victims import Scenario, ScenarioBuilder
from kai.core.state.node_table import Mask
from kai.core.state.pod_status import ACTIVE_USED, PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.resource_index import GPU_ROW
from kai.core.state.task import TaskInfo

Validator = Callable[[Scenario], bool]
EvictionMessage = Callable[[TaskInfo, PodGroupInfo], str]


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
    """The job restricted to ``pending``, each pod set's gang size being the number of its tasks taken."""
    partial = job.clone_with_tasks(pending)
    for pod_set in partial.pod_sets.values():
        if pod_set.tasks:
            pod_set.min_available = len(pod_set.tasks)
    return partial


class JobSolver:
    def __init__(
        self,
        ssn: Session,
        nodes: Mask,
        validator: Validator | None,
        victims_queue: Callable[[], JobsOrderByQueues],
        action: str,
        message: EvictionMessage,
    ) -> None:
        self.ssn = ssn
        self.nodes = nodes
        self.validator = validator
        self.victims_queue = victims_queue
        self.action = action
        self.message = message

    def solve(self, job: PodGroupInfo) -> Solution:
        before = job.count(ACTIVE_USED)
        tasks = tasks_to_allocate(self.ssn, job, False)
        recorded_jobs: list[PodGroupInfo] = []
        recorded_tasks: list[TaskInfo] = []
        statement: Statement | None = None
        for count in range(1, len(tasks) + 1):
            result = self._solve_partial(partial_job(job, tasks[:count]), recorded_jobs, recorded_tasks)
            if result is None:
                break
            if count < len(tasks) and result.statement is not None:
                result.statement.discard()
            statement = result.statement
            recorded_tasks, recorded_jobs = result.victim_tasks, result.victim_jobs
        solved = job.is_gang_satisfied() and job.count(ACTIVE_USED) > before
        return Solution(solved, statement, recorded_tasks, recorded_jobs)

    def _solve_partial(
        self, partial: PodGroupInfo, recorded_jobs: list[PodGroupInfo], recorded_tasks: list[TaskInfo]
    ) -> Solution | None:
        feasible = self.nodes.copy()
        for task in recorded_tasks:
            node = self.ssn.nodes.by_name.get(task.node_name)
            if node is not None:
                feasible[node.column] = True
        builder = ScenarioBuilder(self.ssn, partial, recorded_jobs, self.victims_queue())
        scenario = builder.first()
        while scenario is not None:
            result = self._solve_scenario(scenario, feasible)
            if result.solved:
                return result
            scenario = builder.next()
        return None

    def _solve_scenario(self, scenario: Scenario, feasible: Mask) -> Solution:
        ssn = self.ssn
        statement = Statement(ssn)
        self._evict(scenario.recorded_tasks, scenario.preemptor, statement)
        latest = scenario.latest_potential_job()
        if latest is None:
            if scenario.recorded_tasks:
                result = self._simulate(scenario, statement, feasible, scenario.recorded_tasks)
                if result is not None:
                    return result
        else:
            for node_name in sorted({task.node_name for task in latest.tasks.values() if task.node_name}):
                checkpoint = statement.checkpoint()
                potential = scenario.tasks_from_node(node_name)
                self._evict(potential, scenario.preemptor, statement)
                added = [
                    ssn.nodes.by_name[t.node_name].column
                    for t in potential
                    if t.node_name in ssn.nodes.by_name and not feasible[ssn.nodes.by_name[t.node_name].column]
                ]
                feasible[added] = True
                result = self._simulate(scenario, statement, feasible, scenario.recorded_tasks + potential)
                if result is not None:
                    return result
                feasible[added] = False
                statement.rollback(checkpoint)
        statement.discard()
        return Solution(False)

    def _evict(self, tasks: list[TaskInfo], preemptor: PodGroupInfo, statement: Statement) -> None:
        messages = [self.message(task, preemptor) for task in tasks]
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
            statement.discard()
            return Solution(False)
        victim_tasks = preempted + moved
        jobs: list[PodGroupInfo] = []
        for task in victim_tasks:
            group = scenario.representative_of(task)
            if group is not None and all(group is not j for j in jobs):
                jobs.append(group)
        return Solution(True, statement, victim_tasks, jobs)

    def _place_virtually(
        self, preemptor: PodGroupInfo, statement: Statement, feasible: Mask, victims: list[TaskInfo]
    ) -> bool:
        """Re-place victims and the preemptor in job order, pipeline-only; the preemptor must fit."""
        ssn = self.ssn
        victim_jobs = {task.job_key for task in victims}
        jobs = {job.key: job for job in ssn.jobs.values() if job.has_pending()}
        for key in victim_jobs:
            jobs[key] = ssn.jobs[key]
        jobs[preemptor.key] = preemptor
        queue = JobsOrderByQueues(ssn, JobQueueOptions())
        queue.initialize(jobs)
        placed = False
        while not queue.empty():
            job = queue.pop()
            if job is None:
                break
            if job is preemptor:
                if not allocate_job(ssn, statement, job, True, feasible):
                    return False
                placed = True
            elif job.key in victim_jobs:
                allocate_job(ssn, statement, job, True, feasible)
        return placed
