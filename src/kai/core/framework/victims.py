"""Victim scenarios for reclaim, preempt and consolidation (KAI's PodAccumulatedScenarioBuilder, ByNodeScenario).

A scenario is the preemptor's pending tasks plus victims: victims already recorded by earlier steps of the same
solution, and potential victims accumulated job by job from the victim queue (worst job first). Each new potential
victim job makes a new, larger scenario.
"""

from functools import cmp_to_key

from kai.core.framework.job_allocation import tasks_to_allocate
from kai.core.framework.job_queue import JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.state.pod_status import ACTIVE_ALLOCATED
from kai.core.state.podgroup_info import PodGroupInfo, PodSet
from kai.core.state.task import TaskInfo


def tasks_to_evict(ssn: Session, job: PodGroupInfo) -> tuple[list[TaskInfo], bool]:
    """The next tasks to take from a victim job, and whether it has more: one task from an elastic job above its
    gang size, else every running task (a gang is evicted whole). Orders are the allocation orders reversed."""

    def reverse_pod_set(left: PodSet, right: PodSet) -> int:
        if ssn.pod_set_less(right, left):
            return -1
        return 1 if ssn.pod_set_less(left, right) else 0

    def reverse_task(left: TaskInfo, right: TaskInfo) -> int:
        return ssn.task_cmp(right, left)

    pod_sets = sorted(job.pod_sets.values(), key=cmp_to_key(reverse_pod_set))
    above = any(ps.active_allocated > ps.min_available for ps in pod_sets)
    limit = 1 if above else len(pod_sets)
    chosen: list[TaskInfo] = []
    for pod_set in pod_sets[:limit]:
        running = [t for t in pod_set.tasks.values() if t.status in ACTIVE_ALLOCATED]
        ordered = sorted(running, key=cmp_to_key(reverse_task))
        count = 1 if pod_set.active_allocated > pod_set.min_available else pod_set.active_allocated
        chosen.extend(ordered[:count])
    return chosen, len(chosen) < job.count(ACTIVE_ALLOCATED)


class Scenario:
    def __init__(self, ssn: Session, preemptor: PodGroupInfo, recorded_jobs: list[PodGroupInfo]) -> None:
        self.ssn = ssn
        self.preemptor = preemptor
        self.recorded_jobs = list(recorded_jobs)
        self.recorded_tasks = [task for job in recorded_jobs for task in job.tasks.values()]
        self.potential_tasks: list[TaskInfo] = []
        self.victims: dict[str, list[TaskInfo]] = {}
        self.task_groups: dict[str, list[PodGroupInfo]] = {}
        self.jobs_by_node: dict[str, list[str]] = {}
        for job in recorded_jobs:
            self._add_victim_group(list(job.tasks.values()))

    def _add_victim_group(self, tasks: list[TaskInfo]) -> None:
        original = self.ssn.jobs[tasks[0].job_key]
        self.task_groups.setdefault(original.key, []).append(original.clone_with_tasks(tasks))
        self.victims.setdefault(original.key, []).extend(tasks)

    def add_potential(self, tasks: list[TaskInfo]) -> None:
        if not tasks:
            return
        self.potential_tasks.extend(tasks)
        self._add_victim_group(tasks)
        for task in tasks:
            on_node = self.jobs_by_node.setdefault(task.node_name, [])
            if task.job_key not in on_node:
                on_node.append(task.job_key)

    def latest_potential_job(self) -> PodGroupInfo | None:
        if not self.potential_tasks:
            return None
        return self.ssn.jobs[self.potential_tasks[-1].job_key]

    def tasks_from_node(self, node: str) -> list[TaskInfo]:
        """Every victim task (all task groups) of the potential victim jobs that run on ``node``."""
        return [
            task
            for job_key in sorted(self.jobs_by_node.get(node, []))
            for group in self.task_groups[job_key]
            for task in group.tasks.values()
        ]

    def representative_of(self, task: TaskInfo) -> PodGroupInfo | None:
        for group in self.task_groups.get(task.job_key, []):
            if task.key in group.tasks:
                return group
        return None


class ScenarioBuilder:
    """Yields ever larger scenarios: recorded victims first, then one more potential victim job at a time."""

    def __init__(
        self, ssn: Session, preemptor: PodGroupInfo, recorded_jobs: list[PodGroupInfo], victims: JobsOrderByQueues
    ) -> None:
        self.ssn = ssn
        self.victims = victims
        self.scenario: Scenario | None = None
        self.recorded: set[str] = set()
        if tasks_to_allocate(ssn, preemptor, False):
            self.scenario = Scenario(ssn, preemptor, recorded_jobs)
            self.recorded = {task.key for job in recorded_jobs for task in job.tasks.values()}

    def first(self) -> Scenario | None:
        return self.scenario

    def next(self) -> Scenario | None:
        while not self.victims.empty():
            if self._add_next_victim():
                return self.scenario
        return None

    def _add_next_victim(self) -> bool:
        job = self.victims.pop()
        if job is None:
            return False
        potential, more = tasks_to_evict(self.ssn, job)
        if any(task.key in self.recorded for task in potential):
            remaining = [t for t in job.tasks.values() if t.key not in self.recorded]
            if remaining:
                self.victims.push(job.clone_with_tasks(remaining))
            return False
        if more:
            chosen = {task.key for task in potential}
            self.victims.push(job.clone_with_tasks([t for t in job.tasks.values() if t.key not in chosen]))
        if self.scenario is not None:
            self.scenario.add_potential(potential)
        return True
