"""A victim scenario: the preemptor's pending tasks plus victims, recorded (taken by earlier steps of the same
solution) and potential (accumulated job by job by ``victims.ScenarioBuilder``), each victim job's tasks kept in the
batches they were taken in.

Its own module so that the builder, the filters and the sub-scenario emitter all read it without importing each
other.
"""

from collections.abc import Iterable

from kai.core.framework.session import Session
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.task import TaskInfo


class _Batch:
    """Tasks of one victim job taken together, and the partial representative of the job they make, cloned only
    when asked for (a search accumulates thousands of batches; few end up in a solution)."""

    __slots__ = ("clone", "job", "keys", "tasks")

    def __init__(self, job: PodGroupInfo, tasks: list[TaskInfo]) -> None:
        self.job = job
        self.tasks = tasks
        self.keys = {task.key for task in tasks}
        self.clone: PodGroupInfo | None = None

    def representative(self) -> PodGroupInfo:
        if self.clone is None:
            self.clone = self.job.clone_with_tasks(self.tasks)
        return self.clone


class Scenario:
    def __init__(
        self, ssn: Session, preemptor: PodGroupInfo, pending: list[TaskInfo], recorded_jobs: list[PodGroupInfo]
    ) -> None:
        self.ssn = ssn
        self.preemptor = preemptor
        self.pending_tasks = list(pending)
        self.recorded_jobs = list(recorded_jobs)
        self.recorded_tasks = [task for job in recorded_jobs for task in job.tasks.values()]
        self.potential_tasks: list[TaskInfo] = []
        self.victims: dict[str, list[TaskInfo]] = {}
        """Every victim task (recorded and potential) by victim job."""
        self.task_groups: dict[str, list[_Batch]] = {}
        """Per victim job, its batches of tasks taken together."""
        self.jobs_by_node: dict[str, list[str]] = {}
        for job in recorded_jobs:
            self._add_victim_group(list(job.tasks.values()))
        self._recorded = (
            {k: list(v) for k, v in self.victims.items()},
            {k: list(v) for k, v in self.task_groups.items()},
        )
        """The victims and batches of the recorded jobs alone, which every derived scenario starts from."""

    def derived(self, batches: Iterable[list[TaskInfo]]) -> "Scenario":
        """The same preemptor, pending tasks and recorded victims (the same batches) with other potential victims,
        each batch (tasks of one victim job taken together) becoming one victim representative."""
        scenario = Scenario(self.ssn, self.preemptor, self.pending_tasks, [])
        scenario.recorded_jobs, scenario.recorded_tasks = self.recorded_jobs, self.recorded_tasks
        victims, groups = self._recorded
        scenario.victims = {k: list(v) for k, v in victims.items()}
        scenario.task_groups = {k: list(v) for k, v in groups.items()}
        scenario._recorded = self._recorded
        for batch in batches:
            scenario.add_potential(batch)
        return scenario

    def _add_victim_group(self, tasks: list[TaskInfo]) -> None:
        original = self.ssn.jobs[tasks[0].job_key]
        self.task_groups.setdefault(original.key, []).append(_Batch(original, tasks))
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
            for batch in self.task_groups[job_key]
            for task in batch.tasks
        ]

    def batch_of(self, task: TaskInfo) -> "_Batch | None":
        for batch in self.task_groups.get(task.job_key, []):
            if task.key in batch.keys:
                return batch
        return None

    def representative_of(self, task: TaskInfo) -> PodGroupInfo | None:
        batch = self.batch_of(task)
        return batch.representative() if batch is not None else None
