"""preempt: inside one queue, a higher-priority pending job evicts lower-priority preemptible jobs.

A non-preemptible preemptor must fit its queue's deserved quota; victims come only from its own queue and have a
strictly lower priority.
"""

from collections.abc import Callable

from kai.core.framework.eviction import (
    VICTIMS,
    JobFilter,
    ScopedVictimFilter,
    SolverAction,
    all_of,
    cached_victims,
    candidates_queue,
    each_task,
    has_live_pod,
    may_lose_pods,
    pending_jobs,
    run_solver_action,
    victim_candidates,
)
from kai.core.framework.job_allocation import tasks_to_allocate
from kai.core.framework.queueing.job_index import JobIndex
from kai.core.framework.queueing.job_queue import JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.plugins import priority
from kai.core.state.pod_status import ACTIVE_ALLOCATED
from kai.core.state.podgroup_info import PodGroupInfo

NAME = "preempt"


def execute(ssn: Session) -> None:
    filters = ssn.preempt_victim_filters
    scoped = [keep for keep in filters if isinstance(keep, ScopedVictimFilter)]
    by_queue: dict[str, list[PodGroupInfo]] | None = None
    index: JobIndex | None = None
    involved: dict[str, list[PodGroupInfo]] = {}

    def attempt(job: PodGroupInfo) -> bool:
        return ssn.non_preemptible_over_quota(job, tasks_to_allocate(ssn, job, False)) is None

    def acceptor(preemptor: PodGroupInfo) -> JobFilter:
        def accept(job: PodGroupInfo) -> bool:
            return (
                job.preemptible
                and job.priority < preemptor.priority
                and job.queue == preemptor.queue
                and job.key != preemptor.key
                and job.count(ACTIVE_ALLOCATED) > 0
                and all(keep(preemptor, job) for keep in filters)
            )

        return accept

    def scan(preemptor: PodGroupInfo) -> JobsOrderByQueues:
        """KAI's: the jobs of the preemptor's queue that it may take pods from."""
        nonlocal by_queue
        if by_queue is None:  # victims come from the preemptor's own queue only
            by_queue = {}
            for candidate in ssn.jobs.values():
                by_queue.setdefault(candidate.queue, []).append(candidate)
        return candidates_queue(ssn, victim_candidates(ssn, acceptor(preemptor), by_queue.get(preemptor.queue, [])))

    def indexed(preemptor: PodGroupInfo) -> JobsOrderByQueues:
        """The same queue from the victims kept across commits: the preemptor's queue's, of a lower priority (a
        range of the run, as the priority plugin orders first), the filters asked only about the jobs they may
        refuse."""
        nonlocal index
        if index is None:
            index = JobIndex(
                ssn,
                lambda job: may_lose_pods(job) and has_live_pod(ssn, job),
                worst_first=True,
                pool=ssn.preemptible_jobs(),
            )
        asked = involved.get(preemptor.queue)
        if asked is None:
            keys = sorted(
                {key for keep in scoped for key in keep.involved(preemptor.queue)}, key=index.position.__getitem__
            )
            asked = involved[preemptor.queue] = [ssn.jobs[key] for key in keys]
        accept = acceptor(preemptor)
        refused = [job.key for job in asked if has_live_pod(ssn, job) and not accept(job)]
        index.sync()  # a victims queue is made between simulations: only commits are in force
        return index.leaf_queue(VICTIMS, preemptor.queue, [*refused, preemptor.key], priority.job_key(preemptor))

    def victims(preemptor: PodGroupInfo) -> Callable[[], JobsOrderByQueues]:
        ranked = ssn.job_order_keys[:1] == [priority.job_key]
        make = indexed if ranked and len(scoped) == len(filters) else scan
        return cached_victims(lambda: make(preemptor))

    messages = each_task(
        lambda task, job: (
            f"Pod {task.namespace}/{task.name} was preempted by higher priority workload {job.namespace}/{job.name}"
        ),
        lambda task, job: (
            f"its priority {ssn.jobs[task.job_key].priority} is below {job.priority} in queue {job.queue}"
        ),
    )
    run_solver_action(
        ssn,
        SolverAction(NAME, pending_jobs(ssn, NAME), victims, all_of(ssn.preempt_validators), messages, attempt=attempt),
    )
