"""preempt: inside one queue, a higher-priority pending job evicts lower-priority preemptible jobs.

A non-preemptible preemptor must fit its queue's deserved quota; victims come only from its own queue and have a
strictly lower priority.
"""

from collections.abc import Callable

from kai.core.framework.eviction import (
    all_of,
    cached_victims,
    candidates_queue,
    each_task,
    pending_jobs,
    run_solver_action,
    victim_candidates,
)
from kai.core.framework.job_allocation import tasks_to_allocate
from kai.core.framework.job_queue import JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.state.pod_status import ACTIVE_ALLOCATED
from kai.core.state.podgroup_info import PodGroupInfo

NAME = "preempt"


def execute(ssn: Session) -> None:
    by_queue: dict[str, list[PodGroupInfo]] = {}
    for candidate in ssn.jobs.values():  # victims come from the preemptor's own queue only
        by_queue.setdefault(candidate.queue, []).append(candidate)

    def attempt(job: PodGroupInfo) -> bool:
        return ssn.non_preemptible_over_quota(job, tasks_to_allocate(ssn, job, False)) is None

    def victims(preemptor: PodGroupInfo) -> Callable[[], JobsOrderByQueues]:
        def accept(job: PodGroupInfo) -> bool:
            return (
                job.preemptible
                and job.priority < preemptor.priority
                and job.queue == preemptor.queue
                and job.key != preemptor.key
                and job.count(ACTIVE_ALLOCATED) > 0
                and all(keep(preemptor, job) for keep in ssn.preempt_victim_filters)
            )

        return cached_victims(
            lambda: candidates_queue(ssn, victim_candidates(ssn, accept, by_queue.get(preemptor.queue, [])))
        )

    run_solver_action(
        ssn,
        NAME,
        pending_jobs(ssn, NAME),
        None,
        attempt,
        victims,
        all_of(ssn.preempt_validators),
        each_task(
            lambda task, job: (
                f"Pod {task.namespace}/{task.name} was preempted by higher priority workload {job.namespace}/{job.name}"
            )
        ),
        lambda job: job.queue,
    )
