"""Victim scenarios for reclaim, preempt and consolidation (KAI's PodAccumulatedScenarioBuilder, ByNodeScenario).

A scenario is the preemptor's pending tasks plus victims: victims already recorded by earlier steps of the same
solution, and potential victims accumulated job by job from the victim queue (worst job first). Each new potential
victim job makes a new, larger accumulated scenario; one that cheap filters show cannot be solved is passed over
(``scenario_filters``), and the scenario generators (plugins ``sg-*``) turn the others into the ones actually
simulated.
"""

from collections.abc import Callable, Iterable, Iterator
from functools import cmp_to_key

from kai.core.framework.job_allocation import tasks_to_allocate
from kai.core.framework.queueing.job_queue import JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.framework.victims.scenario import Scenario
from kai.core.framework.victims.scenario_filters import ScenarioFilter, scenario_filters
from kai.core.framework.victims.sub_scenarios import SubScenarioEmitter
from kai.core.state.node_table import Mask
from kai.core.state.pod_status import ACTIVE_ALLOCATED
from kai.core.state.podgroup_info import Member, PodGroupInfo, PodSet, SubGroupSet
from kai.core.state.task import TaskInfo


def tasks_to_evict(ssn: Session, job: PodGroupInfo) -> tuple[list[TaskInfo], bool]:
    """The next tasks to take from a victim job, and whether it has more (KAI's GetTasksToEvict): elastic surplus
    first, deepest in the gang tree (one pod of a pod set above its gang, or a whole member a set has more of
    than it needs), else every running task (a gang is evicted whole). Orders are the allocation orders reversed."""

    def reverse_task(left: TaskInfo, right: TaskInfo) -> int:
        return ssn.task_cmp(right, left)

    root = job.root
    if root.min_subgroup is None and not root.children and len(root.pod_sets) == 1:
        return _from_pod_set(root.pod_sets[0], reverse_task)
    tasks = _elastic_from_set(ssn, root, reverse_task) or _running(root.all_pod_sets(), reverse_task)
    return tasks, len(tasks) < job.count(ACTIVE_ALLOCATED)


def _from_pod_set(pod_set: PodSet, reverse_task: "TaskCmp") -> tuple[list[TaskInfo], bool]:
    """``tasks_to_evict`` for a job that is one pod set (most jobs), counting its running pods once: one pod of a
    surplus, else all of them."""
    running = sorted((t for t in pod_set.tasks.values() if t.status in ACTIVE_ALLOCATED), key=cmp_to_key(reverse_task))
    if len(running) > pod_set.min_available:
        return running[:1], len(running) > 1
    return running, False


TaskCmp = Callable[[TaskInfo, TaskInfo], int]


def _running(pod_sets: Iterable[PodSet], reverse_task: TaskCmp) -> list[TaskInfo]:
    chosen: list[TaskInfo] = []
    for pod_set in pod_sets:
        running = [t for t in pod_set.tasks.values() if t.status in ACTIVE_ALLOCATED]
        chosen.extend(sorted(running, key=cmp_to_key(reverse_task)))
    return chosen


def _elastic_from_set(ssn: Session, group: SubGroupSet, reverse_task: TaskCmp) -> list[TaskInfo]:
    satisfied = group.satisfied_members
    if satisfied == 0:
        return []

    def reverse_member(left: Member, right: Member) -> int:
        return ssn.subgroup_cmp(right, left)

    members = sorted(group.members(), key=cmp_to_key(reverse_member))
    if _has_surplus(group):
        for member in members:
            if isinstance(member, SubGroupSet):
                tasks = _elastic_from_set(ssn, member, reverse_task)
            elif member.active_allocated > member.min_available:
                tasks = _running([member], reverse_task)[:1]
            else:
                tasks = []
            if tasks:
                return tasks
    if group.members_to_satisfy < satisfied:
        for member in members:
            pod_sets = member.all_pod_sets() if isinstance(member, SubGroupSet) else [member]
            tasks = _running(pod_sets, reverse_task)
            if tasks:
                return tasks
    return []


def _has_surplus(group: SubGroupSet) -> bool:
    if group.satisfied_members > group.members_to_satisfy:
        return True
    for member in group.members():
        if isinstance(member, SubGroupSet):
            if _has_surplus(member):
                return True
        elif member.active_allocated > member.min_available:
            return True
    return False


class ScenarioBuilder:
    """Accumulates potential victims one victim job at a time (KAI's PodAccumulatedScenarioBuilder).

    ``accumulated()`` yields the growing scenarios themselves; ``scenarios()`` expands each into node-picked
    sub-scenarios first (``SubScenarioEmitter``). Either starts with the recorded victims alone.
    """

    def __init__(
        self,
        ssn: Session,
        preemptor: PodGroupInfo,
        recorded_jobs: list[PodGroupInfo],
        victims: Callable[[], JobsOrderByQueues],
        feasible: Mask,
        action: str,
    ) -> None:
        """``victims`` builds the victim queue, only once a scenario needs more than the recorded victims."""
        self.ssn = ssn
        self._make_victims = victims
        self._victims: JobsOrderByQueues | None = None
        self.feasible = feasible
        self.action = action
        self.scenario: Scenario | None = None
        self.recorded: set[str] = set()
        self.filters: list[ScenarioFilter] = []
        pending = tasks_to_allocate(ssn, preemptor, False)
        if pending:
            self.scenario = Scenario(ssn, preemptor, pending, recorded_jobs)
            self.recorded = {task.key for job in recorded_jobs for task in job.tasks.values()}
            self.filters = scenario_filters(ssn, self.scenario, feasible)

    @property
    def victims(self) -> JobsOrderByQueues:
        if self._victims is None:
            self._victims = self._make_victims()
        return self._victims

    def accumulated(self) -> Iterator[Scenario]:
        """The accumulated scenarios that pass every filter."""
        if self.scenario is None:
            return
        if self._valid(self.scenario):
            yield self.scenario
        while not self.victims.empty():
            if self._add_next_victim() and self._valid(self.scenario):
                yield self.scenario

    def _valid(self, scenario: Scenario) -> bool:
        for check in self.filters:
            if not check.valid(scenario):
                self.ssn.result.search.filtered[self.action] += 1
                return False
        return True

    def scenarios(self) -> Iterator[Scenario]:
        for scenario in self.accumulated():
            if not scenario.potential_tasks:
                yield scenario
            else:
                yield from SubScenarioEmitter(self.ssn, scenario, self.feasible).scenarios()

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
